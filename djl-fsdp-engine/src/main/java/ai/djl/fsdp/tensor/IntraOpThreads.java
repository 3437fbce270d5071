package ai.djl.fsdp.tensor;

import ai.djl.engine.Engine;
import ai.djl.pytorch.jni.JniUtils;
import java.util.function.Supplier;

/**
 * libtorch's intra-op thread count, which DJL sets once when the engine starts (a rank's comes from
 * the launcher): changed here only for work that must run on a given count, such as the one-thread
 * matrix-product rate the training benchmark measures.
 */
public final class IntraOpThreads {

    private IntraOpThreads() {}

    /**
     * Runs {@code work} with libtorch's intra-op thread count set to {@code threads}, restoring the
     * previous count afterwards. The count is process-wide: other threads' libtorch work in the
     * meantime runs with it too.
     *
     * @param threads the count, at least 1
     * @param work what to run
     * @param <T> the result type
     * @return the work's result
     */
    public static <T> T call(int threads, Supplier<T> work) {
        if (threads < 1) {
            throw new IllegalArgumentException(
                    "intra-op threads must be at least 1, got " + threads);
        }
        // Starting the engine loads the JNI library the thread calls need.
        Engine.getEngine("PyTorch");
        int previous = JniUtils.getNumThreads();
        JniUtils.setNumThreads(threads);
        try {
            return work.get();
        } finally {
            JniUtils.setNumThreads(previous);
        }
    }
}
