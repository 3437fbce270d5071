package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.dist.ShardingMesh;
import ai.djl.fsdp.internal.runtime.FsdpUnit;
import ai.djl.fsdp.internal.runtime.ShardedModel;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Sharding a fresh model unit by unit when the wrap policy depends on the initialization, and a
 * recompute policy that names no unit.
 */
class ModelShardingTest {

    private static final Shape INPUT = new Shape(2, 5);

    @Test
    void aPlanThatChangesWithInitializationLeavesTheModelReadyToInitializeAgain() {
        Block block = twoLinears();
        // Chooses both layers while they hold no parameters, only the first (24 elements against
        // 15) once they do.
        FsdpConfig config =
                FsdpConfig.builder()
                        .optWrapPolicy(
                                WrapPolicy.matching(
                                        b -> {
                                            long count = WrapPolicy.countParameters(b);
                                            return b instanceof Linear
                                                    && (count == 0 || count > 20);
                                        }))
                        .build();
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            IllegalStateException error =
                    assertThrows(
                            IllegalStateException.class, () -> initialize(block, config, manager));
            assertTrue(error.getMessage().contains("left uninitialized"), error.getMessage());
            assertFalse(block.isInitialized());
            // The advice works on the same block.
            block.initialize(manager, DataType.FLOAT32, INPUT);
            assertTrue(block.isInitialized());
            assertEquals(
                    new Shape(3), block.getParameters().get("02Linear_bias").getArray().getShape());
        }
    }

    @Test
    void aRecomputedClassThatIsNoUnitFailsBeforeAnyParameterIsInitialized() {
        Block block = twoLinears();
        FsdpConfig config =
                FsdpConfig.builder()
                        .optWrapPolicy(WrapPolicy.byLayerClass("Linear"))
                        .optActivationCheckpointing(
                                ActivationCheckpointing.byLayerClass("GPT2Block"))
                        .build();
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            IllegalArgumentException error =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> initialize(block, config, manager));
            assertEquals(
                    "activation checkpointing by layer class [GPT2Block] matches no FSDP unit; the"
                            + " units' classes are [Linear]: name one of those (a class recomputed"
                            + " must be a unit, see the wrap policy)",
                    error.getMessage());
            assertFalse(block.isInitialized(), "nothing was initialized");
        }
    }

    @Test
    void aMisspelledLayerClassFailsBeforeAnyParameterIsInitialized() {
        for (WrapPolicy policy :
                List.of(
                        WrapPolicy.byLayerClass("Linaer"),
                        WrapPolicy.byLayerClass("Linear", "Linaer"))) {
            Block block = twoLinears();
            FsdpConfig config = FsdpConfig.builder().optWrapPolicy(policy).build();
            try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
                IllegalArgumentException error =
                        assertThrows(
                                IllegalArgumentException.class,
                                () -> initialize(block, config, manager));
                assertFalse(block.isInitialized(), "nothing was initialized");
                assertTrue(
                        error.getMessage()
                                .startsWith(
                                        "The wrap policy's layer class Linaer matches no block of"
                                                + " the model"),
                        error.getMessage());
            }
        }
    }

    @Test
    void aPolicyOnParameterCountsGetsTheModelInitializedWholeFirst() {
        Block block = twoLinears();
        // 24 elements in the first layer, 15 in the second: none before initialization.
        FsdpConfig config =
                FsdpConfig.builder().optWrapPolicy(WrapPolicy.byMinParameters(20)).build();
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch");
                ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""));
                ShardedModel model = shard(block, config, manager, group)) {
            assertEquals(
                    List.of("root", "0"),
                    model.getUnits().stream().map(FsdpUnit::getName).toList());
        }
    }

    private static Block twoLinears() {
        return new SequentialBlock()
                .add(Linear.builder().setUnits(4).build())
                .add(Linear.builder().setUnits(3).build());
    }

    /** Initializes and shards {@code block} on one rank for an input of {@link #INPUT}. */
    private static void initialize(Block block, FsdpConfig config, NDManager manager) {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""));
                ShardedModel model = shard(block, config, manager, group)) {
            throw new AssertionError("sharded " + model.getUnits().size() + " units");
        }
    }

    /** Initializes and shards {@code block} over {@code group} for an input of {@link #INPUT}. */
    private static ShardedModel shard(
            Block block, FsdpConfig config, NDManager manager, ProcessGroup group) {
        return ModelSharding.initialize(
                        block,
                        manager,
                        DataType.FLOAT32,
                        new Shape[] {INPUT},
                        new TrainingSetup(
                                config, TrainerOptions.defaults(), ShardingMesh.flat(group)),
                        manager)
                .model();
    }
}
