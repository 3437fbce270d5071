package ai.djl.fsdp.dist.nccl;

import ai.djl.fsdp.dist.CollectiveException;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.cuda.global.nccl;

/** Turns NCCL and CUDA runtime result codes into exceptions with their library's message. */
final class NcclStatus {

    private NcclStatus() {}

    static void checkNccl(int result, String call, int rank) {
        if (result != nccl.ncclSuccess) {
            throw new CollectiveException(
                    call + " failed on rank " + rank + ": " + describe(result));
        }
    }

    static void checkCuda(int result, String call) {
        if (result != cudart.cudaSuccess) {
            throw new CollectiveException(
                    call + " failed: " + cudart.cudaGetErrorString(result).getString());
        }
    }

    /** Returns NCCL's text for a result code. */
    static String describe(int ncclResult) {
        return nccl.ncclGetErrorString(ncclResult).getString();
    }
}
