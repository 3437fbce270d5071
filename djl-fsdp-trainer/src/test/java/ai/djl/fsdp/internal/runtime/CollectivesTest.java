package ai.djl.fsdp.internal.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.fsdp.checkpoint.ShardLoader;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.dist.Work;
import ai.djl.fsdp.internal.param.FlatParameter;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.initializer.Initializer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Starting and completing a unit's gather over a recording two-rank group (this rank is 0). */
class CollectivesTest {

    /** Rank 0 of two: records each gather's send buffer and whether it was awaited. */
    private static final class RecordingGroup implements ProcessGroup {
        final List<NDArray> inputs = new ArrayList<>();
        final List<Boolean> awaited = new ArrayList<>();
        int failAtGather = -1;
        boolean failAwait;

        @Override
        public ProcessGroup split(String name, int color) {
            throw new UnsupportedOperationException("not used by these tests");
        }

        @Override
        public Work allGatherAsync(NDArray input, NDArray output) {
            int index = inputs.size();
            if (index == failAtGather) {
                throw new IllegalStateException("gather " + index + " could not be queued");
            }
            inputs.add(input);
            awaited.add(false);
            return new Work() {
                @Override
                public void await() {
                    awaited.set(index, true);
                    if (failAwait) {
                        throw new IllegalStateException("gather " + index + " failed");
                    }
                }

                @Override
                public boolean isDone() {
                    return awaited.get(index);
                }
            };
        }

        @Override
        public int getRank() {
            return 0;
        }

        @Override
        public int getSize() {
            return 2;
        }

        @Override
        public int getLocalRank() {
            return 0;
        }

        @Override
        public String getBackend() {
            return "recording";
        }

        @Override
        public Device getDevice() {
            return Device.cpu();
        }

        @Override
        public Work reduceScatterAsync(NDArray input, NDArray output, ReduceOp op) {
            throw new UnsupportedOperationException();
        }

        @Override
        public Work allReduceAsync(NDArray array, ReduceOp op) {
            throw new UnsupportedOperationException();
        }

        @Override
        public Work allToAllAsync(NDArray input, NDArray output) {
            throw new UnsupportedOperationException();
        }

        @Override
        public long allToAllSentBytes(long bytes) {
            throw new UnsupportedOperationException();
        }

        @Override
        public Work broadcastAsync(NDArray array, int root) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void barrier() {}

        @Override
        public void close() {}
    }

    private static FlatParameter flat(NDManager manager, String name, boolean trainable) {
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
}
