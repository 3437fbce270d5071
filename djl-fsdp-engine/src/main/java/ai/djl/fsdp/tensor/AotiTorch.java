package ai.djl.fsdp.tensor;

import ai.djl.engine.Engine;
import ai.djl.pytorch.jni.LibUtils;
import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.LongByReference;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The part of libtorch's stable C shim ({@code torch/csrc/inductor/aoti_torch/c/shim.h}) that DJL's
 * JNI lacks. A tensor handle here ({@code AtenTensorHandle}) is a heap-allocated {@code
 * at::Tensor*}, exactly what a {@code PtNDArray}'s handle is, so handles pass both ways. Every
 * function but the constant getters returns 0 on success; on failure libtorch has already printed
 * the C++ exception's message to stderr.
 */
public interface AotiTorch extends Library {

    int aoti_torch_dtype_bfloat16();

    int aoti_torch_dtype_float16();

    int aoti_torch_dtype_float32();

    int aoti_torch_device_type_cpu();

    int aoti_torch_device_type_cuda();

    int aoti_torch_get_data_ptr(Pointer tensor, LongByReference dataPtr);

    /** Makes a tensor over memory the caller owns (no deleter): it must outlive every use. */
    int aoti_torch_create_tensor_from_blob(
            Pointer data,
            long ndim,
            long[] sizes,
            long[] strides,
            long storageOffset,
            int dtype,
            int deviceType,
            int deviceIndex,
            LongByReference newTensor);

    /**
     * {@code at::cpu::addmm_out(out, self, mat1, mat2, beta, alpha)}: {@code out = beta self +
     * alpha mat1 mat2} on the CPU; {@code out} may be {@code self} (PyTorch's {@code addmm_}).
     */
    int aoti_torch_cpu_addmm_out(
            Pointer out, Pointer self, Pointer mat1, Pointer mat2, double beta, double alpha);

    /** The shim's CUDA part, in {@code libtorch_cuda.so} of libtorch's CUDA builds only. */
    interface Cuda extends Library {

        int aoti_torch_get_current_cuda_stream(int deviceIndex, LongByReference stream);
    }

    /**
     * Returns the shim of the libtorch that DJL loaded, loading DJL's PyTorch engine first if
     * nothing has yet.
     */
    static AotiTorch cpu() {
        return Loaded.CPU;
    }

    /** Returns the directory of the libtorch that DJL loaded (the shim's own libraries). */
    static Path directory() {
        return Loaded.DIRECTORY;
    }

    /**
     * Returns the CUDA part of the shim.
     *
     * @throws UnsupportedOperationException with the CPU build of libtorch
     */
    static Cuda cuda() {
        if (Loaded.CUDA == null) {
            throw new UnsupportedOperationException(
                    "DJL loaded the CPU build of libtorch from "
                            + Loaded.DIRECTORY
                            + ", which has no CUDA streams; build with `mvn -Pcuda` for GPUs");
        }
        return Loaded.CUDA;
    }

    /**
     * Loads the libraries on first use (the holder idiom keeps CPU-only use from touching CUDA).
     */
    final class Loaded {

        static final Path DIRECTORY = libtorchDirectory();
        static final AotiTorch CPU =
                Native.load(DIRECTORY.resolve("libtorch_cpu.so").toString(), AotiTorch.class);
        static final Cuda CUDA = loadCuda();

        private Loaded() {}

        private static Path libtorchDirectory() {
            // DJL resolves and loads libtorch (its cache under ~/.djl.ai, or PYTORCH_LIBRARY_PATH)
            // when the engine starts; the shim must come from that very copy.
            Engine.getEngine("PyTorch");
            return Path.of(LibUtils.getLibtorchPath());
        }

        private static Cuda loadCuda() {
            Path library = DIRECTORY.resolve("libtorch_cuda.so");
            return Files.exists(library) ? Native.load(library.toString(), Cuda.class) : null;
        }
    }
}
