package ai.djl.fsdp.trainer.metrics;

import ai.djl.Device;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.dist.Work;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * A process group that counts the bytes this rank sends, as the ring algorithms (those of the
 * socket backend and NCCL) move them: an all-gather or reduce-scatter sends {@code (N-1)/N} of the
 * full buffer, an all-reduce twice that, a broadcast the whole array from every rank but the last
 * in the ring, an all-to-all what its backend says it sends ({@link
 * ProcessGroup#allToAllSentBytes}: relayed pieces counted each time they go out), each under its
 * kind ({@link SentBytes}); and the time the caller spends blocked waiting for collectives to
 * finish (the communication that compute did not hide).
 */
public final class MeteredProcessGroup implements ProcessGroup {

    private static final int ALL_GATHER = 0;
    private static final int REDUCE_SCATTER = 1;
    private static final int ALL_REDUCE = 2;
    private static final int OTHER = 3;

    private final ProcessGroup group;
    private final AtomicLongArray sentBytes;
    private final AtomicLong waitNanos;
    private final AtomicLong ownSentBytes = new AtomicLong();

    /**
     * Meters {@code group}'s collectives.
     *
     * @param group the group that runs them
     */
    public MeteredProcessGroup(ProcessGroup group) {
        this(group, new AtomicLongArray(OTHER + 1), new AtomicLong());
    }

    private MeteredProcessGroup(
            ProcessGroup group, AtomicLongArray sentBytes, AtomicLong waitNanos) {
        this.group = group;
        this.sentBytes = sentBytes;
        this.waitNanos = waitNanos;
    }

    /**
     * Returns the bytes sent since the last call, by kind, and starts counting again from zero.
     *
     * @return the bytes sent in this group and its subgroups
     */
    public SentBytes takeSentBytes() {
        return new SentBytes(
                sentBytes.getAndSet(ALL_GATHER, 0),
                sentBytes.getAndSet(REDUCE_SCATTER, 0),
                sentBytes.getAndSet(ALL_REDUCE, 0),
                sentBytes.getAndSet(OTHER, 0));
    }

    /**
     * Returns the bytes sent in this group itself (not its parent or its other subgroups) since the
     * last call, and starts counting again from zero.
     *
     * @return the bytes sent in this group itself
     */
    public long takeOwnSentBytes() {
        return ownSentBytes.getAndSet(0);
    }

    /** Counts bytes this rank sends in this group, into its own figure and the shared one. */
    private void sent(int kind, long bytes) {
        sentBytes.addAndGet(kind, bytes);
        ownSentBytes.addAndGet(bytes);
    }

    /**
     * Returns the nanoseconds spent waiting since the last call, and starts again from zero.
     *
     * @return the nanoseconds spent waiting for this group's collectives
     */
    public long takeWaitNanos() {
        return waitNanos.getAndSet(0);
    }

    /** The collective's completion, timing every wait for it. */
    private Work timed(Work work) {
        return new TimedWork(work);
    }

    /** A collective's completion whose waits are timed; the backend sees the work itself. */
    private final class TimedWork implements Work {
        private final Work work;

        TimedWork(Work work) {
            this.work = work;
        }

        @Override
        public void await() {
            long start = System.nanoTime();
            try {
                work.await();
            } finally {
                waitNanos.addAndGet(System.nanoTime() - start);
            }
        }

        @Override
        public boolean isDone() {
            return work.isDone();
        }
    }

    private static long bytes(NDArray array) {
        // libtorch's type: DJL reads bfloat16 as UNKNOWN, of 0 bytes.
        return array.size() * TensorMemory.dataType(array).getNumOfBytes();
    }

    @Override
    public int getRank() {
        return group.getRank();
    }

    @Override
    public int getSize() {
        return group.getSize();
    }

    @Override
    public int getLocalRank() {
        return group.getLocalRank();
    }

    @Override
    public String getBackend() {
        return group.getBackend();
    }

    @Override
    public Device getDevice() {
        return group.getDevice();
    }

    @Override
    public Work allGatherAsync(NDArray input, NDArray output) {
        sent(ALL_GATHER, bytes(input) * (getSize() - 1));
        return timed(group.allGatherAsync(input, output));
    }

    @Override
    public Work reduceScatterAsync(NDArray input, NDArray output, ReduceOp op) {
        sent(REDUCE_SCATTER, bytes(output) * (getSize() - 1));
        return timed(group.reduceScatterAsync(input, output, op));
    }

    @Override
    public Work allToAllAsync(NDArray input, NDArray output) {
        sent(REDUCE_SCATTER, group.allToAllSentBytes(bytes(input)));
        return timed(group.allToAllAsync(input, output));
    }

    @Override
    public long allToAllSentBytes(long bytes) {
        return group.allToAllSentBytes(bytes);
    }

    @Override
    public Work allReduceAsync(NDArray array, ReduceOp op) {
        sent(ALL_REDUCE, 2 * bytes(array) * (getSize() - 1) / getSize());
        return timed(group.allReduceAsync(array, op));
    }

    @Override
    public Work allReduceAsync(NDArray array, ReduceOp op, Work after) {
        sent(ALL_REDUCE, 2 * bytes(array) * (getSize() - 1) / getSize());
        Work inner = after instanceof TimedWork timedWork ? timedWork.work : after;
        return timed(group.allReduceAsync(array, op, inner));
    }

    /** A subgroup's bytes and waits count with this group's. */
    @Override
    public ProcessGroup split(String name, int color) {
        return new MeteredProcessGroup(group.split(name, color), sentBytes, waitNanos);
    }

    @Override
    public Work broadcastAsync(NDArray array, int root) {
        if (getSize() > 1 && getRank() != Math.floorMod(root - 1, getSize())) {
            sent(OTHER, bytes(array));
        }
        return timed(group.broadcastAsync(array, root));
    }

    @Override
    public void barrier() {
        long start = System.nanoTime();
        try {
            group.barrier();
        } finally {
            waitNanos.addAndGet(System.nanoTime() - start);
        }
    }

    @Override
    public void close() {
        group.close();
    }
}
