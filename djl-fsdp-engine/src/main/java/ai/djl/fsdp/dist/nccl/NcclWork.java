package ai.djl.fsdp.dist.nccl;

import ai.djl.fsdp.dist.CollectiveException;
import ai.djl.fsdp.dist.Work;
import org.bytedeco.cuda.cudart.CUevent_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.cuda.global.nccl;
import org.bytedeco.cuda.nccl.ncclComm;

/**
 * A collective queued on a CUDA stream, tracked by an event recorded right behind it. The event is
 * released as soon as the collective is seen to be done.
 */
final class NcclWork implements Work {

    private final ncclComm comm;
    private final int rank;
    private CUevent_st event;

    NcclWork(ncclComm comm, int rank, DevicePointer stream) {
        this.comm = comm;
        this.rank = rank;
        CUevent_st created = new CUevent_st();
        NcclStatus.checkCuda(
                cudart.cudaEventCreateWithFlags(created, cudart.cudaEventDisableTiming),
                "cudaEventCreateWithFlags");
        NcclStatus.checkCuda(
                cudart.cudaEventRecord(created, new CUstream_st(stream)), "cudaEventRecord");
        event = created;
    }

    @Override
    public synchronized void await() {
        if (event == null) {
            return;
        }
        int result = cudart.cudaEventSynchronize(event);
        release();
        NcclStatus.checkCuda(result, "cudaEventSynchronize");
        checkPeers();
    }

    @Override
    public synchronized boolean isDone() {
        if (event == null) {
            return true;
        }
        int result = cudart.cudaEventQuery(event);
        if (result == cudart.cudaErrorNotReady) {
            return false;
        }
        release();
        NcclStatus.checkCuda(result, "cudaEventQuery");
        return true;
    }

    /** A peer that failed surfaces as the communicator's asynchronous error, not as a CUDA one. */
    private void checkPeers() {
        int[] asyncError = new int[1];
        NcclStatus.checkNccl(
                nccl.ncclCommGetAsyncError(comm, asyncError), "ncclCommGetAsyncError", rank);
        if (asyncError[0] != nccl.ncclSuccess && asyncError[0] != nccl.ncclInProgress) {
            throw new CollectiveException(
                    "NCCL communicator failed on rank "
                            + rank
                            + ": "
                            + nccl.ncclGetErrorString(asyncError[0]).getString());
        }
    }

    private void release() {
        cudart.cudaEventDestroy(event);
        event = null;
    }
}
