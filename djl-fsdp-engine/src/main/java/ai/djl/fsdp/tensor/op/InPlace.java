package ai.djl.fsdp.tensor.op;

import ai.djl.Device;
import ai.djl.fsdp.tensor.AotiTorch;
import ai.djl.fsdp.tensor.DirectShim;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.engine.PtNDManager;

/**
 * Operators that write into an array the caller already holds, which DJL's API lacks: a matrix
 * product into a given array ({@code torch.mm(a, b, out=out)}), one added to it ({@code
 * out.addmm_(a, b)}), a 16-bit array added to a float32 one, the exponential in place ({@code
 * out.exp_()}), and additions at flat positions ({@code out.put_(index, values, accumulate=True)}).
 * Products into one array reused across a loop keep the loop from allocating (and the kernel from
 * zeroing) a fresh array each time. They record no graph: call them outside grad mode, on arrays
 * whose gradient nobody needs through them.
 *
 * <p>On the CPU the products are libtorch's CPU kernels through the C shim; elsewhere they fall
 * back to DJL's product and a copy, with the same results.
 */
public final class InPlace {

    /**
     * The output columns one float32 CPU product writes at a time, about, when its output is wider
     * than {@link #FLOAT32_WIDE_COLUMNS}. On this project's AVX-512 machine MKL's float32 product
     * of a few hundred rows into a very wide row-major output (a loss's {@code [rows, vocab]}
     * logits) ran at 58 to 68 GFLOP/s on one thread, where the layers' shapes reach 97 to 103; in
     * blocks of 1024 columns, each block a view with the whole output's row stride, at 68 to 85
     * (docs/benchmarks.md). Every output element is still one dot product over the whole inner
     * dimension, so the values are the same. oneDNN's bfloat16 product gained nothing from it and
     * is left whole.
     */
    static final long FLOAT32_COLUMN_BLOCK = 1024;

    /**
     * The widest float32 output written whole: a vocabulary's logits are wider, a layer's width (up
     * to 8192) is not, and the blocks were measured on the first only.
     */
    static final long FLOAT32_WIDE_COLUMNS = 8192;

    /**
     * The elements {@link #addWidened} converts at a time: 3 MiB of float32, below the ranks'
     * allocator's mmap threshold (4 MiB), so the block's buffer is reused heap memory.
     */
    static final long WIDEN_BLOCK_ELEMENTS = 3L << 18;

    private InPlace() {}

    /**
     * Writes {@code a b} into {@code out}.
     *
     * @param out a contiguous {@code [m, n]} array of the product's type
     * @param a {@code [m, k]}, any strides (a transposed view reads without a copy)
     * @param b {@code [k, n]}, any strides
     */
    public static void mm(NDArray out, NDArray a, NDArray b) {
        if (onCpu(out)) {
            long columns = out.getShape().get(1);
            if (out.getDataType() != DataType.FLOAT32 || columns <= FLOAT32_WIDE_COLUMNS) {
                mmOnCpu(out, a, b);
                return;
            }
            // Blocks of nearly one size: no last block of a few columns.
            long blocks = (columns + FLOAT32_COLUMN_BLOCK - 1) / FLOAT32_COLUMN_BLOCK;
            long width = (columns + blocks - 1) / blocks;
            for (long start = 0; start < columns; start += width) {
                NDIndex block = new NDIndex(":, {}:{}", start, Math.min(columns, start + width));
                try (NDArray outBlock = out.get(block);
                        NDArray bBlock = b.get(block)) {
                    mmOnCpu(outBlock, a, bBlock);
                }
            }
            return;
        }
        try (NDArray product = a.matMul(b)) {
            TensorMemory.copy(product, out);
        }
    }

    /** {@code torch.mm(a, b, out=out)}; {@code out} may be a view with a row stride. */
    private static void mmOnCpu(NDArray out, NDArray a, NDArray b) {
        DirectShim.mmOut(
                TensorMemory.ptHandle(out), TensorMemory.ptHandle(a), TensorMemory.ptHandle(b));
    }

    /**
     * Adds {@code a b} to {@code out} in place.
     *
     * @param out a contiguous {@code [m, n]} array of the product's type
     * @param a {@code [m, k]}, any strides
     * @param b {@code [k, n]}, any strides
     */
    public static void addMm(NDArray out, NDArray a, NDArray b) {
        if (onCpu(out)) {
            TensorMemory.check(
                    AotiTorch.cpu()
                            .aoti_torch_cpu_addmm_out(
                                    TensorMemory.handle(out),
                                    TensorMemory.handle(out),
                                    TensorMemory.handle(a),
                                    TensorMemory.handle(b),
                                    1,
                                    1),
                    "aoti_torch_cpu_addmm_out");
            return;
        }
        try (NDArray product = a.matMul(b)) {
            out.addi(product);
        }
    }

    /**
     * Adds a 16-bit array to a float32 one in place, a block of rows at a time converted to float32
     * first: the same sums as {@code out.addi(values)}, whose mixed-type add libtorch runs element
     * by element, 5 to 10 times slower on a loss head's {@code [vocab, C]} gradient.
     *
     * @param out a float32 array of at least one dimension
     * @param values an array of {@code out}'s shape, of any floating type
     */
    public static void addWidened(NDArray out, NDArray values) {
        Shape shape = out.getShape();
        long rows = shape.get(0);
        if (rows == 0 || !onCpu(out)) {
            out.addi(values); // on a GPU the mixed-type add is one kernel
            return;
        }
        long block = Math.max(1, WIDEN_BLOCK_ELEMENTS / Math.max(1, shape.size() / rows));
        try (NDManager scratch = out.getManager().newSubManager(out.getDevice())) {
            NDArray buffer =
                    Precision.FLOAT32.empty(
                            scratch, new Shape(Math.min(rows, block)).addAll(shape.slice(1)));
            for (long start = 0; start < rows; start += block) {
                long end = Math.min(rows, start + block);
                NDIndex index = new NDIndex("{}:{}", start, end);
                NDArray widened = attached(buffer.get(new NDIndex("0:{}", end - start)), scratch);
                TensorMemory.copy(attached(values.get(index), scratch), widened);
                attached(out.get(index), scratch).addi(widened);
            }
        }
    }

    /**
     * Replaces every element of {@code out} by its exponential.
     *
     * @param out a floating-point array
     */
    public static void exp(NDArray out) {
        // aten::exp_(Tensor(a!) self) -> Tensor(a!)
        DispatcherCall.of("aten::exp_", 1)
                .tensor(out)
                .call((PtNDManager) out.getManager(), 1)[0]
                .close();
    }

    /**
     * Adds {@code values[i]} to the element at flat position {@code index[i]} of {@code out}, read
     * as one row-major sequence ({@code out.put_(index, values, accumulate=True)}).
     *
     * @param out a contiguous array
     * @param index int64 flat positions
     * @param values as many values as positions, of {@code out}'s type
     */
    public static void putAdd(NDArray out, NDArray index, NDArray values) {
        // aten::put_(Tensor(a!) self, Tensor index, Tensor source, bool accumulate) -> Tensor(a!)
        NDArray[] self =
                DispatcherCall.of("aten::put_", 4)
                        .tensor(out)
                        .tensor(index)
                        .tensor(values)
                        .bool(true)
                        .call((PtNDManager) out.getManager(), 1);
        self[0].close();
    }

    private static NDArray attached(NDArray array, NDManager manager) {
        array.attach(manager);
        return array;
    }

    private static boolean onCpu(NDArray array) {
        return Device.Type.CPU.equals(array.getDevice().getDeviceType());
    }
}
