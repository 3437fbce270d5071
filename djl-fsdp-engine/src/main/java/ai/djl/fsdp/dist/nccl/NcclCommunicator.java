package ai.djl.fsdp.dist.nccl;

import java.time.Duration;
import org.bytedeco.cuda.global.nccl;
import org.bytedeco.cuda.nccl.ncclComm;
import org.bytedeco.cuda.nccl.ncclConfig_t;
import org.bytedeco.cuda.nccl.ncclUniqueId;

/** {@link Communicator} through Bytedeco's NCCL bindings ({@code libjninccl.so}). */
final class NcclCommunicator implements Communicator {

    private final ncclComm comm;
    private final int deviceId;

    NcclCommunicator(ncclComm comm, int deviceId) {
        this.comm = comm;
        this.deviceId = deviceId;
    }

    /**
     * Joins the job's communicator ({@code ncclCommInitRank}), bounded by {@code timeout}.
     *
     * @param id the communicator's unique id, the same on every rank
     * @param worldSize the ranks of the job
     * @param rank this rank
     * @param deviceId this rank's GPU
     * @param timeout the longest the ranks may take to join
     * @return the communicator
     */
    static Communicator initRank(
            ncclUniqueId id, int worldSize, int rank, int deviceId, Duration timeout) {
        ncclComm comm = new ncclComm();
        int result =
                BoundedInit.run(
                        () -> {
                            NcclStatus.CUDA.setDevice(deviceId);
                            return nccl.ncclCommInitRank(comm, worldSize, id, rank);
                        },
                        "ncclCommInitRank",
                        rank,
                        timeout);
        NcclStatus.checkNccl(result, "ncclCommInitRank", rank);
        return new NcclCommunicator(comm, deviceId);
    }

    @Override
    public ncclComm handle() {
        return comm;
    }

    @Override
    public void bindThread() {
        NcclStatus.CUDA.setDevice(deviceId);
    }

    @Override
    public int asyncError() {
        int[] asyncError = new int[1];
        int result = nccl.ncclCommGetAsyncError(comm, asyncError);
        return result != nccl.ncclSuccess ? result : asyncError[0];
    }

    @Override
    public Communicator split(int color, int rank, String what, int jobRank, Duration timeout) {
        ncclComm child = new ncclComm();
        int result =
                BoundedInit.run(
                        () -> {
                            bindThread();
                            return nccl.ncclCommSplit(
                                    comm, color, rank, child, (ncclConfig_t) null);
                        },
                        "ncclCommSplit of " + what,
                        jobRank,
                        timeout);
        NcclStatus.checkNccl(result, "ncclCommSplit", jobRank);
        return new NcclCommunicator(child, deviceId);
    }

    @Override
    public int finalizeComm() {
        return nccl.ncclCommFinalize(comm);
    }

    @Override
    public int destroy() {
        return nccl.ncclCommDestroy(comm);
    }

    @Override
    public int abort() {
        return nccl.ncclCommAbort(comm);
    }

    @Override
    public String describe(int result) {
        return NcclStatus.describe(result);
    }
}
