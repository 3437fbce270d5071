package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.fsdp.internal.config.CollectiveQuantizers;
import ai.djl.fsdp.internal.config.ExecutionOptions;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.memory.CudaLibraries;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class FsdpConfigTest {

    @Test
    void defaultsAreFullShardWithPrefetchAndBroadcastInit() {
        FsdpConfig config =
                FsdpConfig.builder().optWrapPolicy(WrapPolicy.byLayerClass("GPT2Block")).build();
        assertEquals(ShardingStrategy.FULL_SHARD, config.getShardingStrategy());
        assertEquals(ActivationCheckpointing.everyUnit(), config.getActivationCheckpointing());
        assertTrue(config.isPrefetch());
        assertTrue(config.isSyncModuleStates());
        TrainerOptions options = TrainerOptions.defaults();
        assertEquals(1, options.getGradientAccumulationSteps());
        assertEquals(0f, options.getMaxGradNorm());
        assertEquals(1, options.getMaxNonFiniteSteps());
    }

    @Test
    void badSettingsAreNamedWithTheFix() {
        IllegalStateException noPolicy =
                assertThrows(IllegalStateException.class, () -> FsdpConfig.builder().build());
        assertTrue(noPolicy.getMessage().contains("optWrapPolicy"), noPolicy.getMessage());
        IllegalArgumentException accumulation =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> TrainerOptions.builder().optGradientAccumulationSteps(0));
        assertTrue(accumulation.getMessage().contains("at least 1"), accumulation.getMessage());
        assertThrows(
                IllegalArgumentException.class, () -> TrainerOptions.builder().optMaxGradNorm(0));
        IllegalArgumentException nonFinite =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> TrainerOptions.builder().optMaxNonFiniteSteps(0));
        assertTrue(nonFinite.getMessage().contains("at least 1"), nonFinite.getMessage());
        assertThrows(IllegalArgumentException.class, () -> WrapPolicy.byLayerClass());
        assertThrows(IllegalArgumentException.class, () -> WrapPolicy.byMinParameters(0));
        // Resharding after forward with units that keep their graphs.
        ExecutionOptions options =
                new ExecutionOptions(
                        true,
                        true,
                        Precision.FLOAT32,
                        Precision.FLOAT32,
                        CollectiveQuantizers.NONE);
        options.checkDevice(Device.cpu(), true);
        // CUDA GPUs release through the driver's virtual memory, checked for up front (a CPU-only
        // machine names what is missing); any other device is refused.
        Optional<String> driver = CudaLibraries.Part.DRIVER.problem();
        if (driver.isPresent()) {
            UnsupportedOperationException missing =
                    assertThrows(
                            UnsupportedOperationException.class,
                            () -> options.checkDevice(Device.gpu(0), true));
            assertTrue(missing.getMessage().startsWith(driver.get()), missing.getMessage());
            assertTrue(missing.getMessage().contains("gpu(0)"), missing.getMessage());
        } else {
            options.checkDevice(Device.gpu(0), true);
        }
        // Every unit recomputed: no graph is kept over released memory, on any device.
        options.checkDevice(Device.gpu(0), false);
        options.checkDevice(Device.of("tpu", 0), false);
        IllegalArgumentException elsewhere =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> options.checkDevice(Device.of("tpu", 0), true));
        assertTrue(
                elsewhere.getMessage().contains("reshard_after_forward"), elsewhere.getMessage());
        assertTrue(elsewhere.getMessage().contains("tpu(0)"), elsewhere.getMessage());
    }

    @Test
    void strategiesAreShorthandsForTheShardingSettingsAlone() {
        for (ShardingStrategy strategy : ShardingStrategy.values()) {
            FsdpConfig config =
                    FsdpConfig.builder()
                            .optWrapPolicy(WrapPolicy.byLayerClass("GPT2Block"))
                            .optActivationCheckpointing(ActivationCheckpointing.everyNthUnit(2))
                            .optShardingStrategy(strategy)
                            .build();
            assertEquals(strategy, config.getShardingStrategy());
            assertEquals("every:2", config.getActivationCheckpointing().toString(), "kept");
        }
        // Unless set, units are recomputed where their parameters are freed after forward.
        for (ShardingStrategy strategy : ShardingStrategy.values()) {
            FsdpConfig config =
                    FsdpConfig.builder()
                            .optWrapPolicy(WrapPolicy.byLayerClass("GPT2Block"))
                            .optShardingStrategy(strategy)
                            .build();
            assertEquals(
                    ActivationCheckpointing.of(strategy.isReshardAfterForward()),
                    config.getActivationCheckpointing(),
                    strategy.name());
        }
        FsdpConfig keptGathered =
                FsdpConfig.builder()
                        .optWrapPolicy(WrapPolicy.byLayerClass("GPT2Block"))
                        .optReshardAfterForward(false)
                        .build();
        assertEquals(ShardingStrategy.SHARD_GRAD_OP, keptGathered.getShardingStrategy());
        assertEquals(ActivationCheckpointing.none(), keptGathered.getActivationCheckpointing());
    }
}
