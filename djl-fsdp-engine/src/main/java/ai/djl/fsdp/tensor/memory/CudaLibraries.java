package ai.djl.fsdp.tensor.memory;

import ai.djl.engine.Engine;
import ai.djl.engine.StandardCapabilities;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.cuda.global.nccl;
import org.bytedeco.javacpp.Loader;

/**
 * Finds out, once per process and {@link Part}, whether everything a CUDA feature of Bytedeco's
 * bindings needs is here (NCCL's collectives, the CUDA driver's virtual memory management), and if
 * not, which piece is missing and how to get it: libtorch's CUDA build, a GPU it sees, Bytedeco's
 * CUDA JNI glue (the {@code org.bytedeco:cuda} jar with classifier {@code linux-x86_64}, which
 * {@code -Pcuda} adds), and the NCCL, CUDA runtime and driver libraries that glue links to (they
 * are not in its jar: they come from {@code org.bytedeco:cuda-redist}, the system, or a Python
 * environment's {@code nvidia-*} wheels on {@code LD_LIBRARY_PATH}).
 */
public final class CudaLibraries {

    /**
     * The dynamic loader's "cannot open" message names the library that is missing; JavaCPP puts it
     * in the cause of its own "no jnicudart in java.library.path".
     */
    private static final Pattern MISSING =
            Pattern.compile("(lib[\\w.+-]+?\\.so(?:\\.\\d+)*): cannot open shared object file");

    /** The CUDA major version Bytedeco's bindings were built for (12 or 13: see docs/gpu.md). */
    static final int GLUE_CUDA_MAJOR = cudart.CUDART_VERSION / 1000;

    private static final String GPU_DOC = " (see docs/gpu.md)";

    /** What a feature loads: its name in messages, its JNI glue library and its binding class. */
    public enum Part {
        /** NCCL's collectives ({@code libjninccl.so}: {@code libnccl}, the CUDA runtime). */
        NCCL("NCCL", "libjninccl.so", nccl.class),
        /**
         * The CUDA runtime and driver API, virtual memory management included ({@code
         * libjnicudart.so}: {@code libcudart}, the driver's {@code libcuda}).
         */
        DRIVER("CUDA virtual memory", "libjnicudart.so", cudart.class);

        private final String feature;
        private final String glue;
        private final Class<?> binding;
        private Optional<String> problem;

        Part(String feature, String glue, Class<?> binding) {
            this.feature = feature;
            this.glue = glue;
            this.binding = binding;
        }

        /** Returns what keeps this part from running here, empty when nothing does. */
        public synchronized Optional<String> problem() {
            if (problem == null) {
                problem = probe();
            }
            return problem;
        }

        private Optional<String> probe() {
            Engine engine = Engine.getEngine("PyTorch");
            boolean cuda = engine.hasCapability(StandardCapabilities.CUDA);
            int gpus = cuda ? engine.getGpuCount() : 0;
            boolean onClassPath =
                    CudaLibraries.class
                                    .getClassLoader()
                                    .getResource(
                                            "org/bytedeco/cuda/"
                                                    + Loader.getPlatform()
                                                    + "/"
                                                    + glue)
                            != null;
            Throwable failure = null;
            if (cuda && gpus > 0 && onClassPath) {
                try {
                    Loader.load(binding);
                } catch (UnsatisfiedLinkError | NoClassDefFoundError e) {
                    failure = e;
                }
            }
            return diagnose(feature, cuda, gpus, onClassPath, failure);
        }
    }

    private CudaLibraries() {}

    /**
     * Returns the version of the NCCL library that Bytedeco's glue loads here, coded as NCCL codes
     * it ({@code major * 10000 + minor * 100 + patch}: 22809 for NCCL 2.28.9).
     *
     * @throws IllegalStateException where NCCL cannot run here, saying which piece is missing
     */
    public static int ncclVersion() {
        Optional<String> problem = Part.NCCL.problem();
        if (problem.isPresent()) {
            throw new IllegalStateException(problem.get());
        }
        int[] version = new int[1];
        int result = nccl.ncclGetVersion(version);
        if (result != nccl.ncclSuccess) {
            throw new IllegalStateException(
                    "ncclGetVersion failed: " + nccl.ncclGetErrorString(result).getString());
        }
        return version[0];
    }

    /**
     * Returns what keeps a feature from running, from what was found.
     *
     * @param feature the feature's name, such as {@code NCCL}
     * @param libtorchCuda whether DJL's libtorch is a CUDA build
     * @param gpuCount the GPUs that libtorch sees
     * @param glueOnClassPath whether Bytedeco's CUDA glue for this platform is on the class path
     * @param loadFailure what loading the glue threw, null when it loaded (or was not tried)
     */
    static Optional<String> diagnose(
            String feature,
            boolean libtorchCuda,
            int gpuCount,
            boolean glueOnClassPath,
            Throwable loadFailure) {
        if (!libtorchCuda) {
            return Optional.of(
                    feature
                            + " is not available: DJL runs libtorch's CPU build. Build with `mvn"
                            + " -Pcuda package` (libtorch's CUDA build), or point DJL at a CUDA"
                            + " libtorch with PYTORCH_LIBRARY_PATH, PYTORCH_VERSION and"
                            + " PYTORCH_FLAVOR"
                            + GPU_DOC
                            + "; CPU ranks need none of this");
        }
        if (gpuCount == 0) {
            return Optional.of(
                    feature
                            + " is not available: libtorch's CUDA build sees no GPU. Check"
                            + " `nvidia-smi` and CUDA_VISIBLE_DEVICES, or set DJL_FSDP_DEVICE=cpu");
        }
        if (!glueOnClassPath) {
            return Optional.of(
                    feature
                            + " is not available: Bytedeco's CUDA glue (org.bytedeco:cuda,"
                            + " classifier "
                            + Loader.getPlatform()
                            + ") is not on the class path. Build with `mvn -Pcuda package`"
                            + " (CUDA 12) or `mvn -Pcuda13 package` (CUDA 13)"
                            + GPU_DOC);
        }
        if (loadFailure == null) {
            return Optional.empty();
        }
        StringBuilder text = new StringBuilder();
        for (Throwable cause = loadFailure; cause != null; cause = cause.getCause()) {
            text.append(text.length() == 0 ? "" : "; caused by: ").append(cause.getMessage());
            Matcher missing = MISSING.matcher(String.valueOf(cause.getMessage()));
            if (missing.find()) {
                return Optional.of(
                        feature
                                + " is not available: Bytedeco's CUDA "
                                + GLUE_CUDA_MAJOR
                                + " glue is on the class path but the system has no "
                                + missing.group(1)
                                + howToGet(missing.group(1), GLUE_CUDA_MAJOR)
                                + GPU_DOC);
            }
        }
        return Optional.of(
                feature
                        + " is not available: Bytedeco's CUDA "
                        + GLUE_CUDA_MAJOR
                        + " glue failed to load: "
                        + text
                        + GPU_DOC);
    }

    /**
     * Says where a missing library comes from, for the CUDA major version {@code cuda} of the glue
     * (NVIDIA's wheels are named {@code -cu12} for CUDA 12, and CUDA 13's runtime is {@code
     * nvidia-cuda-runtime} 13.x, in {@code nvidia/cu13/lib}).
     */
    static String howToGet(String library, int cuda) {
        if (library.startsWith("libnccl")) {
            return " (NCCL 2). Install it (the distribution's libnccl2, or `pip install"
                    + " nvidia-nccl-cu"
                    + cuda
                    + "` with its nvidia/nccl/lib folder on LD_LIBRARY_PATH),"
                    + " or add org.bytedeco:cuda-redist to the class path";
        }
        if (library.startsWith("libcudart")) {
            String wheel =
                    cuda >= 13
                            ? "nvidia-cuda-runtime~=" + cuda + ".0` with its nvidia/cu" + cuda
                            : "nvidia-cuda-runtime-cu" + cuda + "` with its nvidia/cuda_runtime";
            return " (the CUDA "
                    + cuda
                    + " runtime that Bytedeco's glue links to). Install the CUDA "
                    + cuda
                    + " toolkit's runtime (or `pip install "
                    + wheel
                    + "/lib folder on LD_LIBRARY_PATH), or add org.bytedeco:cuda-redist to the"
                    + " class path; a CUDA "
                    + (cuda >= 13 ? 12 : 13)
                    + " machine needs the other glue (docs/gpu.md)";
        }
        if (library.startsWith("libcuda.")) {
            return " (the NVIDIA driver's library): install the NVIDIA driver";
        }
        return ". Put the folder that holds it on LD_LIBRARY_PATH, or add"
                + " org.bytedeco:cuda-redist to the class path";
    }
}
