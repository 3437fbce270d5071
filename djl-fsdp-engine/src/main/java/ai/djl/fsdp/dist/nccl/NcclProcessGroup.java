package ai.djl.fsdp.dist.nccl;

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
import ai.djl.fsdp.tensor.memory.CudaLibraries;
import ai.djl.fsdp.tensor.memory.CudaRuntime;
import ai.djl.fsdp.tensor.memory.DevicePointer;
import ai.djl.fsdp.util.Failures;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.IntStream;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.global.nccl;
import org.bytedeco.cuda.nccl.ncclUniqueId;

/**
 * A {@link ProcessGroup} over NCCL: one rank per GPU, the communicator set up through the job's
 * {@link Store} ({@link NcclUniqueIds}).
 *
 * <p>Collectives run straight on the arrays' device memory, on two streams of the group's own
 * ({@link NcclStreams}: all-gathers and broadcasts on one, reduce-scatters and all-reduces on the
 * other), each first ordered after everything already queued on the caller's current stream (where
 * DJL's operators run). {@link Work#await()} orders the caller's stream after the collective
 * without blocking the host; {@link #barrier()} and {@link #close()} block the host. A watchdog
 * ({@link NcclWatchdog}) aborts the communicator when NCCL reports an error, when the job's {@link
 * HeartbeatWatchdog} (which the job's group runs, as the socket ring's does) finds a peer stopped
 * or reads the job's failure, or when a collective runs past the options' collective timeout; every
 * later call throws that failure. The streams are made at the first collective.
 *
 * <p>Supported element types: float32, float16, bfloat16 (arrays made by {@link TensorMemory}),
 * float64, int32, int64, int8 and uint8. Arrays must be contiguous and on the group's device, and
 * must stay open until their {@link Work} is awaited: closing them after the await is safe, since
 * PyTorch reuses freed memory in the order of the caller's stream, which now follows the
 * collective.
 */
public final class NcclProcessGroup extends AbstractProcessGroup {

    private final NcclProcessGroup root;
    private final List<NcclProcessGroup> subgroups = new CopyOnWriteArrayList<>();
    private final Device device;
    private final Communicator comm;
    private final ProcessGroupOptions options;

    /** Watches the communicator (package-private: tests queue collectives on it). */
    final NcclWatchdog watchdog;

    private final HeartbeatWatchdog heartbeats;
    private final NDManager manager;
    private volatile JobAbort.Cause jobFailure;
    private NcclStreams streams;
    private NDArray barrierToken;
    private long sequence;
    private boolean closed;

    /**
     * Takes over a communicator that every rank has joined.
     *
     * @param env this rank's place in the job
     * @param device this rank's GPU
     * @param comm the communicator; the group owns it from now on
     * @param store the job's store; the group owns it from now on
     * @param options the timeouts: the heartbeats' and the collectives'
     */
    NcclProcessGroup(
            DistributedEnv env,
            Device device,
            Communicator comm,
            Store store,
            ProcessGroupOptions options) {
        this(
                null,
                null,
                env.getRank(),
                IntStream.range(0, env.getWorldSize()).toArray(),
                env.getLocalRank(),
                device,
                comm,
                store,
                options);
    }

    /**
     * Takes over the job's communicator (no {@code subgroup}: the root, which runs the job's
     * heartbeats when it has peers) or one split from {@code root}'s, which shares the root's
     * store, options and heartbeats and has a watchdog of its own.
     */
    private NcclProcessGroup(
            Subgroup subgroup,
            NcclProcessGroup root,
            int rank,
            int[] jobRanks,
            int localRank,
            Device device,
            Communicator comm,
            Store store,
            ProcessGroupOptions options) {
        super(subgroup, rank, jobRanks, localRank, store);
        this.root = root == null ? this : root;
        this.device = device;
        this.comm = comm;
        this.options = options;
        Duration beat = options.getHeartbeatTimeout();
        Store beats;
        try {
            beats = root != null || size == 1 ? null : store.newClient(beat);
        } catch (RuntimeException e) {
            comm.abort();
            if (root == null) {
                store.close();
            }
            throw e;
        }
        watchdog =
                new NcclWatchdog(
                        comm,
                        jobRank(),
                        options.getCollectiveTimeout(),
                        cause -> JobAbort.agreeOnClient(store, beat, cause));
        manager = NDManager.newBaseManager(device, "PyTorch");
        heartbeats =
                beats == null ? null : new HeartbeatWatchdog(beats, rank, size, beat, this::abort);
    }

    /**
     * Returns whether NCCL can run here: the CUDA build of libtorch sees a GPU, and Bytedeco's CUDA
     * glue ({@code -Pcuda}) loads with the NCCL and CUDA runtime libraries it needs.
     *
     * @return true when {@link #create} can succeed
     * @see CudaLibraries.Part#problem()
     */
    public static boolean isAvailable() {
        return CudaLibraries.Part.NCCL.problem().isEmpty();
    }

    /**
     * Joins the NCCL communicator of the job on this rank's GPU. Every rank calls this together; it
     * returns once all have joined.
     *
     * @param env this rank's place in the job
     * @param store the job's store, through which rank 0 hands out the communicator's unique id;
     *     the group owns it from now on and closes it
     * @param device this rank's GPU, usually {@code RankDevice.of(env)}
     * @param options the longest the communicator's set-up may take (the timeout), how soon a
     *     stopped peer aborts it (the heartbeat timeout) and how long a collective may wait for
     *     live peers (the collective timeout)
     * @return the group
     * @throws UnsupportedOperationException if NCCL cannot run here, saying what is missing
     * @throws CollectiveException if NCCL fails to set up the communicator, or a rank does not join
     *     it within the timeout
     */
    public static NcclProcessGroup create(
            DistributedEnv env, Store store, Device device, ProcessGroupOptions options) {
        Duration timeout = options.getTimeout();
        int rank = env.getRank();
        if (!device.isGpu()) {
            throw new IllegalArgumentException("NCCL needs a GPU, got " + device);
        }
        CudaLibraries.Part.NCCL
                .problem()
                .ifPresent(
                        problem -> {
                            throw new UnsupportedOperationException(problem);
                        });
        NcclStatus.CUDA.setDevice(device.getDeviceId());
        ncclUniqueId id = NcclUniqueIds.exchange(store, rank, env.getWorldSize());
        Communicator comm =
                NcclCommunicator.initRank(
                        id, env.getWorldSize(), rank, device.getDeviceId(), timeout);
        return new NcclProcessGroup(env, device, comm, store, options);
    }

    @Override
    public String getBackend() {
        return "nccl";
    }

    @Override
    public Device getDevice() {
        return device;
    }

    @Override
    public synchronized Work allGatherAsync(NDArray input, NDArray output) {
        int type = NcclTypes.elementType(CollectiveArguments.sameType("allGather", input, output));
        CollectiveArguments.requireSizes("allGather", size, "output", output, "input", input);
        CUstream_st stream = enter(Stream.GATHER);
        NcclStatus.checkNccl(
                nccl.ncclAllGather(
                        data(input), data(output), input.size(), type, comm.handle(), stream),
                "ncclAllGather",
                jobRank());
        return queued("allGather", stream);
    }

    @Override
    public synchronized Work reduceScatterAsync(NDArray input, NDArray output, ReduceOp op) {
        int type =
                NcclTypes.elementType(CollectiveArguments.sameType("reduceScatter", input, output));
        CollectiveArguments.requireSizes("reduceScatter", size, "input", input, "output", output);
        CUstream_st stream = enter(Stream.REDUCE);
        NcclStatus.checkNccl(
                nccl.ncclReduceScatter(
                        data(input),
                        data(output),
                        output.size(),
                        type,
                        NcclTypes.reduction(op),
                        comm.handle(),
                        stream),
                "ncclReduceScatter",
                jobRank());
        return queued("reduceScatter", stream);
    }

    @Override
    public synchronized Work allToAllAsync(NDArray input, NDArray output) {
        DataType type = CollectiveArguments.sameType("allToAll", input, output);
        CollectiveArguments.requirePieces(size, input, output);
        long[] addresses = {data(input).address(), data(output).address()};
        CUstream_st stream = enter(Stream.REDUCE);
        NcclAllToAll.queue(
                comm.handle(), addresses, input.size() / size, type, size, stream, jobRank());
        return queued("allToAll", stream);
    }

    /** Each piece goes straight to its rank. */
    @Override
    public long allToAllSentBytes(long bytes) {
        return bytes / size * (size - 1);
    }

    @Override
    public synchronized Work allReduceAsync(NDArray array, ReduceOp op) {
        return allReduceBehind(array, op, null);
    }

    /**
     * Queues the all-reduce on the reduce stream behind {@code after}'s event when {@code after} is
     * a collective of an NCCL group (a reduce-scatter in the shard group): the reduce stream waits
     * on the GPU, and neither the host nor the caller's stream does, so the next unit's computation
     * is never held up by the reduction. Other work is awaited first, as the default does.
     */
    @Override
    public synchronized Work allReduceAsync(NDArray array, ReduceOp op, Work after) {
        if (!(after instanceof NcclWork)) {
            after.await();
            return allReduceAsync(array, op);
        }
        return allReduceBehind(array, op, (NcclWork) after);
    }

    /** Queues an all-reduce on the reduce stream, behind {@code after} when it is not null. */
    private Work allReduceBehind(NDArray array, ReduceOp op, NcclWork after) {
        int type = NcclTypes.elementType(TensorMemory.dataType(array));
        CUstream_st stream = enter(Stream.REDUCE);
        if (after != null) {
            after.orderBefore(stream);
        }
        NcclStatus.checkNccl(
                nccl.ncclAllReduce(
                        data(array),
                        data(array),
                        array.size(),
                        type,
                        NcclTypes.reduction(op),
                        comm.handle(),
                        stream),
                "ncclAllReduce",
                jobRank());
        return queued("allReduce", stream);
    }

    @Override
    public synchronized Work broadcastAsync(NDArray array, int root) {
        CollectiveArguments.requireRoot(root, size);
        int type = NcclTypes.elementType(TensorMemory.dataType(array));
        CUstream_st stream = enter(Stream.GATHER);
        NcclStatus.checkNccl(
                nccl.ncclBroadcast(
                        data(array), data(array), array.size(), type, root, comm.handle(), stream),
                "ncclBroadcast",
                jobRank());
        return queued("broadcast", stream);
    }

    /**
     * Splits the communicator with {@code ncclCommSplit} (every rank of this group calls it; the
     * members of each subgroup are agreed on through the store, for its messages), bounded by the
     * timeout.
     */
    @Override
    public synchronized ProcessGroup split(String name, int color) {
        if (closed) {
            throw new CollectiveException("The NCCL group of rank " + jobRank() + " is closed");
        }
        Subgroup group = agreeSplit(name, color);
        watchdog.check();
        Communicator child =
                comm.split(color, rank, group.describe(), jobRank(), options.getTimeout());
        NcclProcessGroup split =
                new NcclProcessGroup(
                        group,
                        root,
                        group.getRank(),
                        group.getJobRanks(),
                        localRank,
                        device,
                        child,
                        store,
                        options);
        root.subgroups.add(split);
        JobAbort.Cause failed = root.jobFailure;
        if (failed != null) {
            split.watchdog.abort(failed);
        }
        return split;
    }

    /**
     * The heartbeats' report: the job failed (a peer stopped, or another rank recorded a failure),
     * so this group's communicator and every subgroup's are aborted with it (package-private: tests
     * report a failure).
     */
    void abort(JobAbort.Cause cause) {
        jobFailure = cause;
        watchdog.abort(cause);
        for (NcclProcessGroup child : subgroups) {
            child.watchdog.abort(cause);
        }
    }

    /**
     * NCCL has no barrier of its own: a one-element all-reduce that every rank must join, which the
     * host waits for (bounded by the watchdog's timeout).
     */
    @Override
    public void barrier() {
        NDArray token;
        synchronized (this) {
            if (barrierToken == null) {
                barrierToken = manager.zeros(new Shape(1), DataType.FLOAT32);
            }
            token = barrierToken;
        }
        ((NcclWork) allReduceAsync(token, ReduceOp.SUM)).awaitOnHost();
    }

    /**
     * Waits on the host for every queued collective, says this rank is leaving and stops the
     * heartbeats, stops the watchdog (it polls the communicator), then finalizes and destroys the
     * communicator, or aborts it where waiting or finalizing failed or the job has failed (one the
     * watchdog aborted before is left alone, and its failure, already thrown by the call that met
     * it, is not thrown again), and closes the streams, the arrays and the store (rank 0 once the
     * other ranks have left it).
     *
     * @throws CollectiveException if a queued collective or the communicator failed while closing,
     *     here or in a subgroup (the first failure, later ones suppressed); everything is closed
     *     all the same
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        CollectiveException failure = closeEach(subgroups);
        try {
            comm.bindThread();
            if (!watchdog.aborted()) {
                watchdog.awaitPending();
            }
        } catch (CollectiveException e) {
            failure = Failures.suppress(failure, e);
        }
        if (heartbeats != null) {
            sayLeaving(storeLost());
            heartbeats.close();
        }
        watchdog.close();
        try {
            failure = end(failure);
        } finally {
            if (streams != null) {
                streams.close();
            }
            manager.close();
            if (subgroup == null) {
                leaveStore(
                        jobFailure != null || watchdog.aborted(),
                        storeLost(),
                        options.getTimeout());
            } else {
                root.subgroups.remove(this);
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    private boolean storeLost() {
        JobAbort.Cause cause = jobFailure;
        return cause != null && cause.message().contains(JobAbort.STORE_LOST);
    }

    /**
     * Ends the communicator once the watchdog and the heartbeats have stopped: aborts it after
     * {@code failure} or the job's failure (its peer may be stopped: finalizing would wait on it),
     * else finalizes and destroys it (aborting it if finalizing fails); returns the failure to
     * report.
     */
    private CollectiveException end(CollectiveException failure) {
        if (watchdog.aborted()) {
            return failure;
        }
        if (failure != null || root.jobFailure != null) {
            comm.abort();
            return failure;
        }
        int finalized = comm.finalizeComm();
        if (finalized != nccl.ncclSuccess) {
            comm.abort();
            return failed("ncclCommFinalize", finalized);
        }
        int destroyed = comm.destroy();
        return destroyed == nccl.ncclSuccess ? null : failed("ncclCommDestroy", destroyed);
    }

    private CollectiveException failed(String call, int result) {
        return new CollectiveException(
                call + " failed on rank " + jobRank() + ": " + comm.describe(result));
    }

    /** The group's two communication streams. */
    private enum Stream {
        GATHER,
        REDUCE
    }

    /**
     * Makes the group's GPU current on the calling thread (CUDA's current device is per thread, and
     * events must belong to their stream's device), throws a failure the watchdog has seen, and
     * orders {@code stream} after the caller's current stream, so that the collective sees every
     * operator queued before it.
     */
    private CUstream_st enter(Stream which) {
        if (closed) {
            throw new CollectiveException("The NCCL group of rank " + jobRank() + " is closed");
        }
        watchdog.check();
        comm.bindThread();
        if (streams == null) {
            streams = new NcclStreams();
        }
        CUstream_st stream = which == Stream.GATHER ? streams.gather() : streams.reduce();
        NcclStreams.order(stream, CudaRuntime.currentStream(device));
        return stream;
    }

    private Work queued(String collective, CUstream_st stream) {
        sequence++;
        return new NcclWork(collective + " #" + sequence + where(), device, stream, watchdog);
    }

    private DevicePointer data(NDArray array) {
        if (!device.equals(array.getDevice())) {
            throw new IllegalArgumentException(
                    "This NCCL group runs on "
                            + device
                            + " but an array is on "
                            + array.getDevice());
        }
        return new DevicePointer(TensorMemory.contiguousDataPointer(array, "collective's array"));
    }
}
