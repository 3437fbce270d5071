package ai.djl.fsdp.internal.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.fsdp.checkpoint.ShardLoader;
import ai.djl.fsdp.internal.param.FlatParameter;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.initializer.Initializer;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Starting and completing a unit's gather and gradient reduction over a recording two-rank group
 * (this rank is 0), failures included.
 */
class CollectivesTest {

    /** A flat parameter of one 4x4 parameter of ones, rank 0's shard of two. */
    static FlatParameter flat(NDManager manager, String name, boolean trainable) {
        Parameter parameter =
                Parameter.builder()
                        .setName(name)
                        .setType(Parameter.Type.WEIGHT)
                        .optShape(new Shape(4, 4))
                        .optInitializer(Initializer.ONES)
                        .build();
        parameter.initialize(manager, DataType.FLOAT32);
        return new ShardLoader(2, 0, manager, null, null).load(name, trainable, List.of(parameter));
    }

    /** A unit of two flat parameters, one trainable and one frozen. */
    private static FsdpUnit unitOfTwo(NDManager manager) {
        return new FsdpUnit(
                1,
                "u",
                null,
                List.of(),
                List.of(flat(manager, "u.t", true), flat(manager, "u.f", false)),
                List.of(),
                true);
    }

    @Test
    void castSendBuffersAreFreedOnceTheGatherHasCompleted() {
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            RecordingGroup group = new RecordingGroup();
            FsdpUnit unit = unitOfTwo(manager);
            new Collectives(group).startGather(unit, Precision.BFLOAT16);
            assertEquals(2, group.inputs.size());
            for (NDArray sent : group.inputs) {
                assertFalse(sent.isReleased(), "a send buffer lives while its gather may read it");
            }

            unit.awaitGather();

            assertEquals(UnitState.GATHERED, unit.getState());
            for (NDArray sent : group.inputs) {
                assertTrue(sent.isReleased(), "the bf16 cast of the shard is freed at await");
            }
            for (FlatParameter flat : unit.getFlatParameters()) {
                assertFalse(flat.getFull().isReleased(), "the full buffer stays");
            }
            unit.close();
        }
    }

    @Test
    void aGatherThatFailsToStartWaitsForTheGathersAlreadyQueued() {
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            RecordingGroup group = new RecordingGroup();
            group.failAtGather = 1;
            FsdpUnit unit = unitOfTwo(manager);
            IllegalStateException failure =
                    assertThrows(
                            IllegalStateException.class,
                            () -> new Collectives(group).startGather(unit, Precision.FLOAT32));
            assertEquals("gather 1 could not be queued", failure.getMessage());
            assertEquals(List.of(true), group.awaited, "the queued gather is complete");
            assertEquals(UnitState.RESHARDED, unit.getState());
            unit.close();
        }
    }

    @Test
    void closingAUnitWhoseGatherFailedStillClosesItsFlatParameters() {
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            RecordingGroup group = new RecordingGroup();
            group.failAwait = true;
            List<FlatParameter> flats =
                    List.of(flat(manager, "u.t", true), flat(manager, "u.f", false));
            FsdpUnit unit = new FsdpUnit(1, "u", null, List.of(), flats, List.of(), true);
            new Collectives(group).startGather(unit, Precision.FLOAT32);
            IllegalStateException failure = assertThrows(IllegalStateException.class, unit::close);
            assertEquals("gather 0 failed", failure.getMessage());
            for (FlatParameter flat : flats) {
                assertTrue(flat.getShard().isReleased(), flat.getId() + " is closed");
            }
        }
    }

    @Test
    void aShardInTheGatheredTypeIsSentAsItIs() {
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            RecordingGroup group = new RecordingGroup();
            FlatParameter flat = flat(manager, "u.t", true);
            FsdpUnit unit = new FsdpUnit(1, "u", null, List.of(), List.of(flat), List.of(), true);
            new Collectives(group).startGather(unit, Precision.FLOAT32);
            unit.awaitGather();
            assertSame(flat.getShard(), group.inputs.get(0));
            assertFalse(flat.getShard().isReleased(), "the shard itself is never freed");
            unit.close();
        }
    }

    @Test
    void aReductionThatFailsToStartWaitsForTheReductionsAlreadyQueued() {
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            RecordingGroup group = new RecordingGroup();
            group.failAtReduction = 1;
            FsdpUnit unit = unitOfTrainables(manager);
            NDManager scope = manager.newSubManager();
            IllegalStateException failure =
                    assertThrows(
                            IllegalStateException.class,
                            () ->
                                    new Collectives(group)
                                            .startReduction(
                                                    unit,
                                                    leavesOf(unit, scope),
                                                    Precision.FLOAT32,
                                                    1f,
                                                    scope));
            assertEquals("reduction 1 could not be queued", failure.getMessage());
            assertEquals(List.of(true), group.reductionsAwaited, "the queued one is complete");
            scope.close();
            unit.close();
        }
    }

    @Test
    void aReductionThatFailsWaitsForTheLaterOnesBeforeFreeingWhatTheyRead() {
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            RecordingGroup group = new RecordingGroup();
            group.failAwait = true;
            FsdpUnit unit = unitOfTrainables(manager);
            NDManager scope = manager.newSubManager();
            PendingReduction reduction =
                    new Collectives(group)
                            .startReduction(
                                    unit, leavesOf(unit, scope), Precision.FLOAT32, 1f, scope);
            reduction.releaseWhenDone(scope);
            assertEquals(List.of(false, false), group.reductionsAwaited);

            IllegalStateException failure =
                    assertThrows(IllegalStateException.class, reduction::complete);

            assertEquals("reduction 0 failed", failure.getMessage());
            assertEquals(1, failure.getSuppressed().length);
            assertEquals("reduction 1 failed", failure.getSuppressed()[0].getMessage());
            assertEquals(List.of(true, true), group.reductionsAwaited, "both are complete");
            assertFalse(scope.isOpen(), "what they read is freed afterwards");
            unit.close();
        }
    }

    /** A unit of two trainable flat parameters: two reductions a backward. */
    private static FsdpUnit unitOfTrainables(NDManager manager) {
        return new FsdpUnit(
                1,
                "u",
                null,
                List.of(),
                List.of(flat(manager, "u.a", true), flat(manager, "u.b", true)),
                List.of(),
                true);
    }

    /** Gradient leaves over zeros for each of {@code unit}'s flat parameters (no gradient yet). */
    private static List<GradientLeaves> leavesOf(FsdpUnit unit, NDManager scope) {
        return unit.getFlatParameters().stream()
                .map(
                        flat ->
                                GradientLeaves.ofBuffer(
                                        flat.getLayout(),
                                        scope.zeros(new Shape(flat.getLayout().getPaddedNumel())),
                                        scope))
                .toList();
    }
}
