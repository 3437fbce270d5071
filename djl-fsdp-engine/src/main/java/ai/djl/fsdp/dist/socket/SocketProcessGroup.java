package ai.djl.fsdp.dist.socket;

import ai.djl.Device;
import ai.djl.fsdp.dist.AbstractProcessGroup;
import ai.djl.fsdp.dist.CollectiveArguments;
import ai.djl.fsdp.dist.CollectiveException;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.HeartbeatWatchdog;
import ai.djl.fsdp.dist.JobAbort;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.dist.Subgroup;
import ai.djl.fsdp.dist.Work;
import ai.djl.fsdp.rendezvous.Store;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.IntStream;

/**
 * The CPU backend: a ring of TCP connections between neighbouring ranks, running NCCL's ring
 * algorithms straight on the arrays' memory.
 *
 * <p>Collectives run in call order on one communication thread per group. When a peer dies, the
 * rank that notices records the cause in the store ({@link JobAbort}; the first to notice wins) and
 * then closes its ring links; its neighbours' links break in turn, and they read the recorded
 * cause, so every surviving rank fails promptly with the same message naming the rank at fault. A
 * peer that stops (SIGSTOP) breaks no link: each rank's {@link HeartbeatWatchdog} finds it within
 * the timeout from its missing heartbeats, or from a store that no longer answers when the stopped
 * rank is rank 0, and fails the group the same way. The group stays failed: later collectives fail
 * at once with that message, which names the rank at fault and the collective that was running.
 */
public final class SocketProcessGroup extends AbstractProcessGroup {

    /** The largest piece a broadcast sends at once (a buffer holds at most 2 GiB). */
    static final int BROADCAST_PIECE_BYTES = 1 << 30;

    private final SocketProcessGroup root;
    private final List<SocketProcessGroup> subgroups = new CopyOnWriteArrayList<>();
    private final Ring ring;
    private final RingCollectives collectives;
    private final ProcessGroupOptions options;
    private final byte[] token;
    private final InetAddress localAddress;
    private final Duration timeout;
    private final ExecutorService communication;
    private final Set<SocketWork> outstanding = ConcurrentHashMap.newKeySet();
    private final GroupFailure failure;
    private final HeartbeatWatchdog watchdog;
    private long sequence;
    private volatile SocketWork running;
    private volatile String lastRun = "before the first collective";
    private volatile boolean closed;

    /**
     * Makes the job's group (no {@code subgroup}: the root, with the watchdog) or a subgroup of
     * {@code root} (the root's watchdog reports to it).
     */
    private SocketProcessGroup(
            Subgroup subgroup,
            SocketProcessGroup root,
            int rank,
            int[] jobRanks,
            int localRank,
            Store store,
            Ring ring,
            ProcessGroupOptions options,
            byte[] token,
            InetAddress localAddress) {
        super(subgroup, rank, jobRanks, localRank, store);
        this.root = root == null ? this : root;
        this.ring = ring;
        this.options = options;
        this.token = token;
        this.localAddress = localAddress;
        timeout = options.getTimeout();
        collectives = new RingCollectives(ring, rank, size, options.getSocketChunkBytes());
        int jobRank = jobRank();
        String threadName =
                "djl-fsdp-socket-rank"
                        + jobRank
                        + (subgroup == null
                                ? ""
                                : "-" + subgroup.getName() + '-' + subgroup.getColor());
        communication =
                Executors.newSingleThreadExecutor(
                        task -> {
                            Thread thread = new Thread(task, threadName);
                            thread.setDaemon(true);
                            return thread;
                        });
        failure = new GroupFailure(store, jobRank, timeout, ring);
        watchdog =
                ring == null || subgroup != null
                        ? null
                        : new HeartbeatWatchdog(
                                store.newClient(options.getHeartbeatTimeout()),
                                rank,
                                size,
                                options.getHeartbeatTimeout(),
                                this::abort);
    }

    /**
     * Joins the ring of {@code env}'s ranks; every rank calls it at about the same time.
     *
     * @param store the job's store, which the group now owns and closes
     * @param localAddress the address of this machine the other ranks can reach
     * @throws CollectiveException if the ring cannot be formed within the options' timeout
     */
    public static SocketProcessGroup connect(
            DistributedEnv env,
            Store store,
            InetAddress localAddress,
            ProcessGroupOptions options) {
        int[] jobRanks = IntStream.range(0, env.getWorldSize()).toArray();
        byte[] token = env.getJobToken().getBytes(StandardCharsets.UTF_8);
        Ring ring =
                connectRing(
                        store, "", env.getRank(), jobRanks, token, localAddress, options, () -> "");
        try {
            return new SocketProcessGroup(
                    null,
                    null,
                    env.getRank(),
                    jobRanks,
                    env.getLocalRank(),
                    store,
                    ring,
                    options,
                    token,
                    localAddress);
        } catch (RuntimeException e) {
            // The watchdog's store client could not be opened: the ring is nobody's to close.
            Ring.closeQuietly(ring);
            throw e;
        }
    }

    /** Forms a ring of {@code jobRanks.length} ranks, or returns null for a group of one. */
    private static Ring connectRing(
            Store store,
            String keyPrefix,
            int rank,
            int[] jobRanks,
            byte[] token,
            InetAddress localAddress,
            ProcessGroupOptions options,
            Supplier<String> which) {
        if (jobRanks.length == 1) {
            return null;
        }
        try {
            return RingConnector.connect(
                    store,
                    keyPrefix,
                    rank,
                    jobRanks,
                    token,
                    localAddress,
                    options.getTimeout(),
                    options.getCollectiveTimeout(),
                    options.getSocketBufferBytes(),
                    options.isPeerMemoryCopy());
        } catch (IOException | RuntimeException e) {
            throw new CollectiveException(
                    "Rank "
                            + jobRanks[rank]
                            + " could not join the socket ring of "
                            + jobRanks.length
                            + " ranks"
                            + which.get()
                            + ": "
                            + e.getMessage(),
                    e);
        }
    }

    /**
     * Splits the group: the ranks that give the same color form a ring of their own, which finds
     * its members' addresses in the job's store under the subgroup's keys.
     */
    @Override
    public ProcessGroup split(String name, int color) {
        if (closed) {
            throw closedError();
        }
        Subgroup group = agreeSplit(name, color);
        Ring subRing =
                connectRing(
                        store,
                        group.getKeyPrefix(),
                        group.getRank(),
                        group.getJobRanks(),
                        token,
                        localAddress,
                        options,
                        () -> " of " + group.describe());
        SocketProcessGroup child =
                new SocketProcessGroup(
                        group,
                        root,
                        group.getRank(),
                        group.getJobRanks(),
                        localRank,
                        store,
                        subRing,
                        options,
                        token,
                        localAddress);
        root.subgroups.add(child);
        return child;
    }

    /** The watchdog's report: the job failed, so this group and every subgroup fail with it. */
    private void abort(JobAbort.Cause cause) {
        failure.abort(cause);
        for (SocketProcessGroup child : subgroups) {
            child.failure.abort(cause);
        }
    }

    @Override
    public String getBackend() {
        return "socket";
    }

    @Override
    public Device getDevice() {
        return Device.cpu();
    }

    @Override
    public Work allGatherAsync(NDArray input, NDArray output) {
        CollectiveArguments.sameType("allGather", input, output);
        CollectiveArguments.requireSizes("allGather", size, "output", output, "input", input);
        ByteBuffer in = TensorMemory.hostBuffer(input, "allGather input");
        ByteBuffer out = TensorMemory.hostBuffer(output, "allGather output");
        return submit(
                "allGather of " + out.capacity() + " bytes", () -> collectives.allGather(in, out));
    }

    @Override
    public Work reduceScatterAsync(NDArray input, NDArray output, ReduceOp op) {
        DataType type = CollectiveArguments.sameType("reduceScatter", input, output);
        CollectiveArguments.requireSizes("reduceScatter", size, "input", input, "output", output);
        ElementReduction reduction = ElementReduction.of(type);
        ByteBuffer in = TensorMemory.hostBuffer(input, "reduceScatter input");
        ByteBuffer out = TensorMemory.hostBuffer(output, "reduceScatter output");
        int divisor = divisor(op);
        return submit(
                "reduceScatter of " + in.capacity() + " bytes",
                () -> collectives.reduceScatter(in, out, reduction, divisor));
    }

    @Override
    public Work allReduceAsync(NDArray array, ReduceOp op) {
        return allReduceAsync(array, op, null);
    }

    /** Queues the all-reduce at once; the communication thread waits for {@code after} first. */
    @Override
    public Work allReduceAsync(NDArray array, ReduceOp op, Work after) {
        ElementReduction reduction = ElementReduction.of(TensorMemory.dataType(array));
        ByteBuffer memory = TensorMemory.hostBuffer(array, "allReduce array");
        int divisor = divisor(op);
        return submit(
                "allReduce of " + memory.capacity() + " bytes",
                () -> {
                    if (after != null) {
                        after.await();
                    }
                    collectives.allReduce(memory, reduction, divisor);
                });
    }

    @Override
    public Work allToAllAsync(NDArray input, NDArray output) {
        CollectiveArguments.sameType("allToAll", input, output);
        CollectiveArguments.requirePieces(size, input, output);
        ByteBuffer in = TensorMemory.hostBuffer(input, "allToAll input");
        ByteBuffer out = TensorMemory.hostBuffer(output, "allToAll output");
        return submit(
                "allToAll of " + in.capacity() + " bytes", () -> collectives.allToAll(in, out));
    }

    /** Relayed along the ring: the piece for the rank {@code k} on is sent {@code k} times. */
    @Override
    public long allToAllSentBytes(long bytes) {
        return bytes / size * size * (size - 1) / 2;
    }

    @Override
    public Work broadcastAsync(NDArray array, int root) {
        CollectiveArguments.requireRoot(root, size);
        // A buffer holds at most 2 GiB: a larger array (a 150k-word embedding in float32) goes
        // piece by piece, in order, as one collective.
        List<ByteBuffer> pieces =
                TensorMemory.hostBuffers(array, "broadcast array", BROADCAST_PIECE_BYTES);
        long bytes = pieces.stream().mapToLong(ByteBuffer::capacity).sum();
        return submit(
                "broadcast of " + bytes + " bytes from rank " + root,
                () -> {
                    for (ByteBuffer piece : pieces) {
                        collectives.broadcast(piece, root);
                    }
                });
    }

    @Override
    public void barrier() {
        submit("barrier", collectives::barrier).await();
    }

    private int divisor(ReduceOp op) {
        switch (op) {
            case SUM:
                return 1;
            case AVG:
                return size;
            default:
                throw new IllegalArgumentException("Unsupported reduction " + op);
        }
    }

    /** A collective's body, run on the communication thread. */
    @FunctionalInterface
    private interface Collective {
        void run() throws PeerFailure;
    }

    private Work submit(String description, Collective collective) {
        SocketWork work;
        String where = where();
        synchronized (this) {
            work =
                    new SocketWork(
                            (description + ' ').replaceFirst(" ", " #" + ++sequence + ' ').trim()
                                    + where);
        }
        outstanding.add(work);
        try {
            communication.execute(() -> run(work, collective));
        } catch (RejectedExecutionException e) {
            outstanding.remove(work);
            work.fail(closedError());
        }
        return work;
    }

    private void run(SocketWork work, Collective collective) {
        try {
            CollectiveException failed = failure.get();
            if (failed != null) {
                work.fail(failed);
                return;
            }
            running = work;
            collective.run();
            work.complete();
        } catch (PeerFailure e) {
            work.fail(fail(e));
        } catch (RuntimeException e) {
            work.fail(e);
        } finally {
            lastRun = "after " + work;
            running = null;
            outstanding.remove(work);
        }
    }

    /**
     * Records a failure seen on a link as the group's (see {@link GroupFailure}) and returns the
     * error every later collective fails with.
     */
    private CollectiveException fail(PeerFailure cause) {
        if (closed) {
            return closedError();
        }
        CollectiveException failed =
                failure.fail(
                        cause,
                        () -> {
                            SocketWork work = running;
                            return work != null ? " in " + work : " " + lastRun;
                        });
        return failed != null ? failed : closedError();
    }

    private CollectiveException closedError() {
        return new CollectiveException(
                "The process group on rank "
                        + jobRank()
                        + (subgroup == null ? "" : " of " + subgroup.describe())
                        + " is closed");
    }

    /**
     * Closes the group's splits, fails outstanding work, closes the ring, and leaves the store;
     * rank 0, which hosts it, keeps it up until the other ranks have left (a short while when the
     * job already failed).
     *
     * @throws CollectiveException if a split failed to close (the first failure); everything is
     *     closed all the same
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        CollectiveException splitFailure = closeEach(subgroups);
        if (watchdog != null) {
            sayLeaving(failure.isStoreLost());
            watchdog.close();
        }
        communication.shutdownNow();
        if (ring != null) {
            ring.close();
        }
        for (SocketWork work : outstanding) {
            work.fail(closedError());
        }
        try {
            communication.awaitTermination(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (subgroup != null) {
            // The store is the job's group's.
            root.subgroups.remove(this);
        } else {
            leaveStore(failure.isFailed(), failure.isStoreLost(), timeout);
        }
        if (splitFailure != null) {
            throw splitFailure;
        }
    }
}
