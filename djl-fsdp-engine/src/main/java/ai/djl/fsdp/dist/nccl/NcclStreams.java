package ai.djl.fsdp.dist.nccl;

import org.bytedeco.cuda.cudart.CUevent_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.global.cudart;

/**
 * The group's two communication streams, so that gathering the next unit's parameters and reducing
 * the last unit's gradients overlap each other and the computation: all-gathers and broadcasts on
 * one, reduce-scatters and all-reduces on the other. Both are non-blocking streams (no implicit
 * ordering with the legacy default stream); every ordering is an explicit event.
 */
final class NcclStreams implements AutoCloseable {

    private final CUstream_st gather;
    private final CUstream_st reduce;

    /** Creates both streams on the calling thread's current device. */
    NcclStreams() {
        gather = create();
        reduce = create();
    }

    /** Returns the stream of all-gathers and broadcasts. */
    CUstream_st gather() {
        return gather;
    }

    /** Returns the stream of reduce-scatters and all-reduces. */
    CUstream_st reduce() {
        return reduce;
    }

    /**
     * Makes {@code communication} wait for everything queued on {@code compute} so far, so that the
     * next collective reads its inputs (and writes its outputs) only once the computation that
     * produced or last used them is done.
     */
    static void order(CUstream_st communication, CUstream_st compute) {
        CUevent_st ready = recordEvent(compute);
        try {
            waitFor(communication, ready);
        } finally {
            cudart.cudaEventDestroy(ready);
        }
    }

    /** Records a timing-free event on {@code stream} and returns it; the caller destroys it. */
    static CUevent_st recordEvent(CUstream_st stream) {
        return NcclStatus.CUDA.recordEvent(stream);
    }

    /** Makes {@code stream} wait for {@code event} on the GPU; the host does not wait. */
    static void waitFor(CUstream_st stream, CUevent_st event) {
        NcclStatus.CUDA.check(cudart.cudaStreamWaitEvent(stream, event, 0), "cudaStreamWaitEvent");
    }

    private static CUstream_st create() {
        CUstream_st stream = new CUstream_st();
        NcclStatus.CUDA.check(
                cudart.cudaStreamCreateWithFlags(stream, cudart.cudaStreamNonBlocking),
                "cudaStreamCreateWithFlags");
        return stream;
    }

    /** Destroys both streams; CUDA lets work already queued on them finish first. */
    @Override
    public void close() {
        cudart.cudaStreamDestroy(gather);
        cudart.cudaStreamDestroy(reduce);
    }
}
