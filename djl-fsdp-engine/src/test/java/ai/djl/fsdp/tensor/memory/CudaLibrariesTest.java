package ai.djl.fsdp.tensor.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Each missing piece of a CUDA set-up gets its own message, with what was found given. */
class CudaLibrariesTest {

    private static String problem(
            boolean cuda, int gpus, boolean glue, UnsatisfiedLinkError failure) {
        Optional<String> problem = CudaLibraries.diagnose("NCCL", cuda, gpus, glue, failure);
        assertTrue(problem.isPresent(), "a problem is expected");
        return problem.get();
    }

    @Test
    void theCpuBuildOfLibtorchIsNamedWithBothFixes() {
        String message = problem(false, 0, false, null);
        assertTrue(message.contains("CPU build"), message);
        assertTrue(message.contains("mvn -Pcuda"), message);
        assertTrue(message.contains("PYTORCH_LIBRARY_PATH"), message);
    }

    @Test
    void aCudaLibtorchWithoutGpusPointsAtTheDriver() {
        String message = problem(true, 0, true, null);
        assertTrue(message.contains("sees no GPU"), message);
        assertTrue(message.contains("nvidia-smi"), message);
    }

    @Test
    void aMissingGlueJarAsksForTheCudaProfile() {
        String message = problem(true, 2, false, null);
        assertTrue(message.contains("org.bytedeco:cuda"), message);
        assertTrue(message.contains("mvn -Pcuda package` (CUDA 12)"), message);
        assertTrue(message.contains("mvn -Pcuda13 package` (CUDA 13)"), message);
    }

    @Test
    void aMissingNcclIsNamedAndTheBuildIsNotBlamed() {
        UnsatisfiedLinkError error =
                new UnsatisfiedLinkError(
                        "/root/.javacpp/cache/cuda.jar/org/bytedeco/cuda/linux-x86_64/"
                                + "libjninccl.so: libnccl.so.2: cannot open shared object file: No"
                                + " such file or directory");
        String message = problem(true, 2, true, error);
        assertTrue(message.contains("no libnccl.so.2 (NCCL 2)"), message);
        assertTrue(message.contains("nvidia-nccl-cu" + CudaLibraries.GLUE_CUDA_MAJOR), message);
        assertTrue(!message.contains("mvn -Pcuda"), message);
    }

    @Test
    void aMissingCudaRuntimeAndDriverAreNamed() {
        String runtime =
                problem(
                        true,
                        1,
                        true,
                        new UnsatisfiedLinkError(
                                "libjnicudart.so: libcudart.so.12: cannot open shared object"
                                        + " file: No such file or directory"));
        assertTrue(
                runtime.contains(
                        "no libcudart.so.12 (the CUDA "
                                + CudaLibraries.GLUE_CUDA_MAJOR
                                + " runtime"),
                runtime);
        String driver =
                problem(
                        true,
                        1,
                        true,
                        new UnsatisfiedLinkError(
                                "libjnicudart.so: libcuda.so.1: cannot open shared object file"));
        assertTrue(driver.contains("NVIDIA driver"), driver);
    }

    @Test
    void theLibraryMissingBehindJavaCppsOwnMessageIsNamed() {
        // What JavaCPP 1.5.13 throws where CUDA 13's runtime is absent: its own message on top,
        // the dynamic loader's in the cause.
        UnsatisfiedLinkError error =
                new UnsatisfiedLinkError(
                        "no jnicudart in java.library.path: /usr/java/packages/lib:/usr/lib");
        error.initCause(
                new UnsatisfiedLinkError(
                        "/root/.javacpp/cache/cuda-13.1-9.19-1.5.13-linux-x86_64.jar/org/bytedeco/"
                                + "cuda/linux-x86_64/libjnicudart.so: libcudart.so.13: cannot"
                                + " open shared object file: No such file or directory"));
        String message = problem(true, 1, true, error);
        assertTrue(message.contains("the system has no libcudart.so.13 ("), message);
        assertTrue(!message.contains("java.library.path"), message);
    }

    @Test
    void theWayToGetALibraryFollowsTheGluesCudaVersion() {
        String runtime13 = CudaLibraries.howToGet("libcudart.so.13", 13);
        assertTrue(runtime13.contains("CUDA 13 runtime"), runtime13);
        assertTrue(runtime13.contains("pip install nvidia-cuda-runtime~=13.0"), runtime13);
        assertTrue(runtime13.contains("nvidia/cu13/lib"), runtime13);
        assertTrue(
                !runtime13.contains("cu12") && !runtime13.contains("CUDA 12 runtime"), runtime13);
        assertTrue(CudaLibraries.howToGet("libnccl.so.2", 13).contains("nvidia-nccl-cu13"));
        String runtime12 = CudaLibraries.howToGet("libcudart.so.12", 12);
        assertTrue(runtime12.contains("nvidia-cuda-runtime-cu12"), runtime12);
        assertTrue(runtime12.contains("nvidia/cuda_runtime/lib"), runtime12);
    }

    @Test
    void anyOtherLoadFailureIsPassedOnAndEverythingPresentIsNoProblem() {
        String message = problem(true, 1, true, new UnsatisfiedLinkError("undefined symbol: x"));
        assertTrue(message.contains("undefined symbol: x"), message);
        assertEquals(Optional.empty(), CudaLibraries.diagnose("NCCL", true, 1, true, null));
    }

    @Test
    void theFeatureIsNamed() {
        Optional<String> problem =
                CudaLibraries.diagnose(
                        "CUDA virtual memory",
                        true,
                        1,
                        true,
                        new UnsatisfiedLinkError(
                                "libjnicudart.so: libcuda.so.1: cannot open shared object file"));
        assertTrue(problem.orElseThrow().startsWith("CUDA virtual memory is not available"));
        assertTrue(problem.orElseThrow().contains("NVIDIA driver"));
    }
}
