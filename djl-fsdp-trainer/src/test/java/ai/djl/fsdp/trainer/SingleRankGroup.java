package ai.djl.fsdp.trainer;

import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.dist.Work;
import ai.djl.ndarray.NDArray;

/** A world of one rank: every collective is a copy or nothing. */
final class SingleRankGroup implements ProcessGroup {

    private static final Work DONE = new Work() {
        @Override
        public void await() {}

        @Override
        public boolean isDone() {
            return true;
        }
    };

    @Override
    public int rank() {
        return 0;
    }

    @Override
    public int size() {
        return 1;
    }

    @Override
    public int localRank() {
        return 0;
    }

    @Override
    public String backend() {
        return "single";
    }

    @Override
    public Work allGatherAsync(NDArray input, NDArray output) {
        output.set(input.toByteBuffer());
        return DONE;
    }

    @Override
    public Work reduceScatterAsync(NDArray input, NDArray output, ReduceOp op) {
        output.set(input.toByteBuffer());
        return DONE;
    }

    @Override
    public Work allReduceAsync(NDArray array, ReduceOp op) {
        return DONE;
    }

    @Override
    public Work broadcastAsync(NDArray array, int root) {
        return DONE;
    }

    @Override
    public void barrier() {}

    @Override
    public void close() {}
}
