package ai.djl.fsdp.bench.train;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.fsdp.tensor.IntraOpThreads;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

/**
 * The matrix-product rate of the device the ranks train on, the yardstick of the training
 * benchmark's model FLOPs, in float32 and in bfloat16 (operands made through {@link Precision}),
 * the fastest of several timed rounds through DJL's {@code matMul}. On the CPU: one thread, a
 * {@code 1024 x 1536} by {@code 1536 x 384} product (the shape of a transformer's projections). On
 * a GPU: the whole device, {@code 4096 x 4096} squares, each round ended by reading a value of its
 * last product (the host waits for the device's queue).
 *
 * @param float32 GFLOP/s in float32, on one thread (CPU) or one device (GPU)
 * @param bfloat16 GFLOP/s in bfloat16, likewise
 * @param device the device measured
 */
record MatMulPeak(double float32, double bfloat16, Device device) {

    private static final int ROUNDS = 5;
    private static final int PRODUCTS_PER_ROUND = 4;

    /**
     * Measures both rates in this process on {@code device}: on the CPU on one intra-op thread
     * (restored afterwards).
     *
     * @param device the ranks' device (its kind matters: a rank's GPU is measured as gpu 0's kind)
     * @return the rates
     */
    static MatMulPeak measure(Device device) {
        if (device.isGpu()) {
            return measure(device, new Shape(4096, 4096), new Shape(4096, 4096));
        }
        return IntraOpThreads.call(
                1, () -> measure(Device.cpu(), new Shape(1024, 1536), new Shape(1536, 384)));
    }

    private static MatMulPeak measure(Device device, Shape left, Shape right) {
        try (NDManager manager = Engine.getEngine("PyTorch").newBaseManager(device)) {
            NDArray a = manager.randomNormal(left);
            NDArray b = manager.randomNormal(right);
            NDArray a16 = Precision.BFLOAT16.cast(a);
            NDArray b16 = Precision.BFLOAT16.cast(b);
            return new MatMulPeak(rate(a, b), rate(a16, b16), device);
        }
    }

    /**
     * Returns the rate of a precision on one thread (CPU) or one device (GPU).
     *
     * @param precision {@code FLOAT32} or {@code BFLOAT16}; float16 has no fast path on CPUs and is
     *     measured against the float32 rate
     * @return GFLOP/s
     */
    double perUnit(Precision precision) {
        return precision == Precision.BFLOAT16 ? bfloat16 : float32;
    }

    private static double rate(NDArray a, NDArray b) {
        double flop = 2.0 * a.getShape().get(0) * a.getShape().get(1) * b.getShape().get(1);
        finish(a.matMul(b)); // warm-up: first-call allocation and dispatch
        long best = Long.MAX_VALUE;
        for (int round = 0; round < ROUNDS; round++) {
            long start = System.nanoTime();
            for (int i = 1; i < PRODUCTS_PER_ROUND; i++) {
                a.matMul(b).close();
            }
            finish(a.matMul(b));
            best = Math.min(best, System.nanoTime() - start);
        }
        return flop * PRODUCTS_PER_ROUND / best;
    }

    /**
     * Reads one value of {@code product}, so that a GPU's queued products have run, and frees it.
     */
    private static void finish(NDArray product) {
        try (product;
                NDArray corner = product.get(0, 0).toType(DataType.FLOAT32, false)) {
            corner.getFloat();
        }
    }
}
