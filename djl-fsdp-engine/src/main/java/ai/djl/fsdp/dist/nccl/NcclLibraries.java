package ai.djl.fsdp.dist.nccl;

import ai.djl.engine.Engine;
import ai.djl.engine.StandardCapabilities;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.bytedeco.cuda.global.nccl;
import org.bytedeco.javacpp.Loader;

/**
 * Finds out, once per process, whether everything NCCL needs is here, and if not, which piece is
 * missing and how to get it: libtorch's CUDA build, a GPU it sees, Bytedeco's CUDA JNI glue (the
 * {@code org.bytedeco:cuda} jar with classifier {@code linux-x86_64}, which {@code -Pcuda} adds),
 * and the NCCL and CUDA runtime libraries that glue links to (they are not in its jar: they come
 * from {@code org.bytedeco:cuda-redist}, the system, or a Python environment's {@code nvidia-*}
 * wheels on {@code LD_LIBRARY_PATH}).
 */
final class NcclLibraries {

    /** The loader's "cannot open" message names the library that is missing. */
    private static final Pattern MISSING =
            Pattern.compile("(lib[\\w.+-]+?\\.so(?:\\.\\d+)*): cannot open shared object file");

    private static final String GPU_DOC = " (see docs/gpu.md)";

    private NcclLibraries() {}

    /** Returns what keeps NCCL from running here, empty when nothing does. */
    static Optional<String> problem() {
        return Holder.PROBLEM;
    }

    /**
     * Returns what keeps NCCL from running, from what was found.
     *
     * @param libtorchCuda whether DJL's libtorch is a CUDA build
     * @param gpuCount the GPUs that libtorch sees
     * @param glueOnClassPath whether Bytedeco's CUDA glue for this platform is on the class path
     * @param loadFailure what loading the glue threw, null when it loaded (or was not tried)
     */
    static Optional<String> diagnose(
            boolean libtorchCuda, int gpuCount, boolean glueOnClassPath, Throwable loadFailure) {
        if (!libtorchCuda) {
            return Optional.of(
                    "NCCL is not available: DJL runs libtorch's CPU build. Build with `mvn -Pcuda"
                            + " package` (libtorch's CUDA build), or point DJL at a CUDA libtorch"
                            + " with PYTORCH_LIBRARY_PATH, PYTORCH_VERSION and PYTORCH_FLAVOR"
                            + GPU_DOC
                            + "; on CPUs the socket backend needs none of this");
        }
        if (gpuCount == 0) {
            return Optional.of(
                    "NCCL is not available: libtorch's CUDA build sees no GPU. Check `nvidia-smi`"
                            + " and CUDA_VISIBLE_DEVICES, or set DJL_FSDP_DEVICE=cpu");
        }
        if (!glueOnClassPath) {
            return Optional.of(
                    "NCCL is not available: Bytedeco's CUDA glue (org.bytedeco:cuda, classifier "
                            + Loader.getPlatform()
                            + ") is not on the class path. Build with `mvn -Pcuda package`"
                            + GPU_DOC);
        }
        if (loadFailure == null) {
            return Optional.empty();
        }
        String text = String.valueOf(loadFailure.getMessage());
        Matcher missing = MISSING.matcher(text);
        if (missing.find()) {
            return Optional.of(
                    "NCCL is not available: Bytedeco's CUDA glue is on the class path but the"
                            + " system has no "
                            + missing.group(1)
                            + howToGet(missing.group(1))
                            + GPU_DOC);
        }
        return Optional.of(
                "NCCL is not available: Bytedeco's CUDA glue failed to load: " + text + GPU_DOC);
    }

    private static String howToGet(String library) {
        if (library.startsWith("libnccl")) {
            return " (NCCL 2). Install it (the distribution's libnccl2, or `pip install"
                    + " nvidia-nccl-cu12` with its nvidia/nccl/lib folder on LD_LIBRARY_PATH),"
                    + " or add org.bytedeco:cuda-redist to the class path";
        }
        if (library.startsWith("libcudart")) {
            return " (the CUDA 12 runtime that Bytedeco's glue links to). Install the CUDA 12"
                    + " toolkit's runtime (or `pip install nvidia-cuda-runtime-cu12` with its"
                    + " nvidia/cuda_runtime/lib folder on LD_LIBRARY_PATH), or add"
                    + " org.bytedeco:cuda-redist to the class path";
        }
        if (library.startsWith("libcuda.")) {
            return " (the NVIDIA driver's library): install the NVIDIA driver";
        }
        return ". Put the folder that holds it on LD_LIBRARY_PATH, or add"
                + " org.bytedeco:cuda-redist to the class path";
    }

    /** Probes once, on first use. */
    private static final class Holder {
        static final Optional<String> PROBLEM = probe();

        private static Optional<String> probe() {
            Engine engine = Engine.getEngine("PyTorch");
            boolean cuda = engine.hasCapability(StandardCapabilities.CUDA);
            int gpus = cuda ? engine.getGpuCount() : 0;
            boolean glue =
                    NcclLibraries.class
                                    .getClassLoader()
                                    .getResource(
                                            "org/bytedeco/cuda/"
                                                    + Loader.getPlatform()
                                                    + "/libjninccl.so")
                            != null;
            Throwable failure = null;
            if (cuda && gpus > 0 && glue) {
                try {
                    Loader.load(nccl.class);
                } catch (UnsatisfiedLinkError | NoClassDefFoundError e) {
                    failure = e;
                }
            }
            return diagnose(cuda, gpus, glue, failure);
        }
    }
}
