package ai.djl.fsdp.internal.runtime;

import ai.djl.Device;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.dist.Work;
import ai.djl.ndarray.NDArray;
import java.util.ArrayList;
import java.util.List;

/**
 * Rank 0 of two, moving nothing: records each gather's and reduce-scatter's send buffer and whether
 * its work was awaited, and fails a chosen one to start or every await, as a test asks.
 */
final class RecordingGroup implements ProcessGroup {

    /** The gathers' send buffers, in the order they were started. */
    final List<NDArray> inputs = new ArrayList<>();

    /** Whether each gather was awaited, by start order. */
    final List<Boolean> awaited = new ArrayList<>();

    /** The reduce-scatters' send buffers, in the order they were started. */
    final List<NDArray> reduced = new ArrayList<>();

    /** Whether each reduce-scatter was awaited, by start order. */
    final List<Boolean> reductionsAwaited = new ArrayList<>();

    /** The gather that fails to start, by start order; -1 for none. */
    int failAtGather = -1;

    /** The reduce-scatter that fails to start, by start order; -1 for none. */
    int failAtReduction = -1;

    /** Whether every await fails (after recording it). */
    boolean failAwait;

    @Override
    public Work allGatherAsync(NDArray input, NDArray output) {
        return record("gather", input, inputs, awaited, failAtGather);
    }

    @Override
    public Work reduceScatterAsync(NDArray input, NDArray output, ReduceOp op) {
        return record("reduction", input, reduced, reductionsAwaited, failAtReduction);
    }

    private Work record(
            String kind, NDArray input, List<NDArray> sent, List<Boolean> done, int failAt) {
        int index = sent.size();
        if (index == failAt) {
            throw new IllegalStateException(kind + " " + index + " could not be queued");
        }
        sent.add(input);
        done.add(false);
        return new Work() {
            @Override
            public void await() {
                done.set(index, true);
                if (failAwait) {
                    throw new IllegalStateException(kind + " " + index + " failed");
                }
            }

            @Override
            public boolean isDone() {
                return done.get(index);
            }
        };
    }

    @Override
    public ProcessGroup split(String name, int color) {
        throw new UnsupportedOperationException("not used by these tests");
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
