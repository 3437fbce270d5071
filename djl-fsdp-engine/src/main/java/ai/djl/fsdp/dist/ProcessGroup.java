package ai.djl.fsdp.dist;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;

/**
 * The ranks of one job and the collectives they run together, on DJL {@link NDArray}s.
 *
 * <p>The semantics are NCCL's: every rank calls the same collectives in the same order; outputs are
 * caller-provided arrays written in place; {@code allGather} and {@code reduceScatter} move
 * equal-sized pieces, so the larger array holds exactly {@link #getSize()} times the elements of
 * the smaller one (callers pad, as FSDP does); {@code allToAll} moves {@link #getSize()} equal
 * pieces each way. Supported element types are float32, float16, bfloat16, int32 and int64 (NCCL
 * also float64, int8 and uint8; the socket ring any type in the collectives that add nothing:
 * all-gather, all-to-all and broadcast). Arrays must be contiguous.
 *
 * <p>The asynchronous forms run in call order on the group's own stream of work and return a {@link
 * Work} to wait on; the synchronous forms wait before returning, in {@link Work#await()}'s sense (a
 * GPU group orders the caller's stream, not the host). An error on any rank (a rank that died, a
 * timeout) fails the pending and all later work; the socket backend's exception names the rank at
 * fault, NCCL's carries NCCL's own error.
 */
public interface ProcessGroup extends AutoCloseable {

    /** Returns this process's rank, {@code 0 <= rank < size}. */
    int getRank();

    /** Returns the number of ranks in the group (the world size). */
    int getSize();

    /** Returns this process's rank among the ranks of its node. */
    int getLocalRank();

    /** Returns the backend's name, such as {@code socket} or {@code nccl}. */
    String getBackend();

    /** Returns the device whose arrays the group moves: this rank's GPU for NCCL, else the CPU. */
    Device getDevice();

    /**
     * Gathers every rank's {@code input} into {@code output}, rank {@code r}'s elements at offset
     * {@code r * input.size()}.
     */
    Work allGatherAsync(NDArray input, NDArray output);

    /**
     * Reduces {@code input} element-wise across ranks and leaves piece {@code rank()} of the result
     * (elements {@code [rank * output.size(), (rank + 1) * output.size())}) in {@code output}.
     */
    Work reduceScatterAsync(NDArray input, NDArray output, ReduceOp op);

    /** Reduces {@code array} element-wise across ranks, in place. */
    Work allReduceAsync(NDArray array, ReduceOp op);

    /**
     * Sends piece {@code r} of {@code input} to rank {@code r} and leaves rank {@code s}'s piece
     * for this rank in piece {@code s} of {@code output}: both arrays hold {@link #getSize()} equal
     * pieces (this rank's own piece is copied across). How many bytes that sends depends on the
     * backend ({@link #allToAllSentBytes}).
     */
    Work allToAllAsync(NDArray input, NDArray output);

    /**
     * Returns how many bytes this rank sends in an all-to-all of {@code bytes} bytes a rank: {@code
     * (N-1)/N} of them where each piece goes straight to its rank (NCCL's grouped sends), more
     * where pieces are relayed through the ranks between (the socket ring).
     *
     * @param bytes the size of an all-to-all's input
     * @return the bytes this rank sends
     */
    long allToAllSentBytes(long bytes);

    /** Copies {@code root}'s {@code array} into every other rank's {@code array}. */
    Work broadcastAsync(NDArray array, int root);

    /**
     * Reduces {@code array} element-wise across ranks, in place, once {@code after} is done: how a
     * reduction in one group (a reduce-scatter inside a shard group) hands its result to another
     * (the all-reduce across replicas) without the caller waiting in between. The default waits for
     * {@code after} first; the socket ring waits on its own communication thread, and NCCL makes
     * its communication stream wait for {@code after}'s event on the GPU (the caller's compute
     * stream never waits). If {@code after} fails, so does this.
     *
     * @param array the array to reduce, written by {@code after}
     * @param op the reduction
     * @param after the work whose result {@code array} holds
     * @return the all-reduce's work
     */
    default Work allReduceAsync(NDArray array, ReduceOp op, Work after) {
        after.await();
        return allReduceAsync(array, op);
    }

    /** Returns once every rank has called it. */
    void barrier();

    /**
     * Splits this group: every rank calls it with the same {@code name} and a color, and the ranks
     * that gave the same color form a new group, ranked in this group's order (PyTorch's {@code
     * new_subgroups}, NCCL's {@code ncclCommSplit}). A collective over this group: every rank of
     * the job makes its splits in the same order. The new group shares this group's store, timeouts
     * and failure handling: a failure in either ends both, and its messages name the subgroup
     * ({@link Subgroup#describe()}). This group closes its subgroups when it closes; a subgroup may
     * be closed earlier.
     *
     * @param name the split's name in messages, the same on every rank
     * @param color this rank's color, 0 or more
     * @return this rank's subgroup
     * @throws IllegalArgumentException if the name is blank or the color is negative
     * @throws CollectiveException if the subgroup's ranks cannot connect within the timeout
     */
    ProcessGroup split(String name, int color);

    /** The synchronous form of {@link #allGatherAsync}. */
    default void allGather(NDArray input, NDArray output) {
        allGatherAsync(input, output).await();
    }

    /** The synchronous form of {@link #reduceScatterAsync}. */
    default void reduceScatter(NDArray input, NDArray output, ReduceOp op) {
        reduceScatterAsync(input, output, op).await();
    }

    /** The synchronous form of {@link #allReduceAsync}. */
    default void allReduce(NDArray array, ReduceOp op) {
        allReduceAsync(array, op).await();
    }

    /** The synchronous form of {@link #allToAllAsync}. */
    default void allToAll(NDArray input, NDArray output) {
        allToAllAsync(input, output).await();
    }

    /** The synchronous form of {@link #broadcastAsync}. */
    default void broadcast(NDArray array, int root) {
        broadcastAsync(array, root).await();
    }

    /** Releases the group's connections; outstanding work fails. */
    @Override
    void close();
}
