package ai.djl.fsdp.dist.nccl;

import ai.djl.fsdp.dist.CollectiveException;
import ai.djl.fsdp.tensor.memory.CudaRuntime;
import org.bytedeco.cuda.global.nccl;

/**
 * Turns NCCL and CUDA runtime result codes into collective failures with their library's message.
 */
final class NcclStatus {

    private NcclStatus() {}

    static void checkNccl(int result, String call, int rank) {
        if (result != nccl.ncclSuccess) {
            throw new CollectiveException(
                    call + " failed on rank " + rank + ": " + describe(result));
        }
    }

    /** CUDA runtime calls whose failures are collective failures. */
    static final CudaRuntime CUDA = CudaRuntime.throwing(CollectiveException::new);

    /** Returns NCCL's text for a result code. */
    static String describe(int ncclResult) {
        return nccl.ncclGetErrorString(ncclResult).getString();
    }
}
