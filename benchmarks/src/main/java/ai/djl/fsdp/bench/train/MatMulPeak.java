package ai.djl.fsdp.bench.train;

import ai.djl.engine.Engine;
import ai.djl.fsdp.tensor.IntraOpThreads;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;

/**
 * This machine's matrix-product rate on one thread, the yardstick of the training benchmark's model
 * FLOPs: a {@code 1024 x 1536} by {@code 1536 x 384} product (the shape of a transformer's
 * projections) through DJL's {@code matMul}, in float32 and in bfloat16 (operands made through
 * {@link Precision}), the fastest of several timed rounds.
 *
 * @param float32 GFLOP/s on one thread in float32
 * @param bfloat16 GFLOP/s on one thread in bfloat16
 */
record MatMulPeak(double float32, double bfloat16) {

    private static final int ROUNDS = 5;
    private static final int PRODUCTS_PER_ROUND = 4;
    private static final double FLOP = 2.0 * 1024 * 1536 * 384;

    /**
     * Measures both rates in this process, on one intra-op thread (restored afterwards).
     *
     * @return the rates
     */
    static MatMulPeak measure() {
        return IntraOpThreads.call(
                1,
                () -> {
                    try (NDManager manager = Engine.getEngine("PyTorch").newBaseManager()) {
                        NDArray a = manager.randomNormal(new Shape(1024, 1536));
                        NDArray b = manager.randomNormal(new Shape(1536, 384));
                        NDArray a16 = Precision.BFLOAT16.cast(a);
                        NDArray b16 = Precision.BFLOAT16.cast(b);
                        return new MatMulPeak(rate(a, b), rate(a16, b16));
                    }
                });
    }

    /**
     * Returns the rate of a precision on one thread.
     *
     * @param precision {@code FLOAT32} or {@code BFLOAT16}; float16 has no fast path on CPUs and is
     *     measured against the float32 rate
     * @return GFLOP/s
     */
    double perThread(Precision precision) {
        return precision == Precision.BFLOAT16 ? bfloat16 : float32;
    }

    private static double rate(NDArray a, NDArray b) {
        a.matMul(b).close(); // warm-up: first-call allocation and dispatch
        long best = Long.MAX_VALUE;
        for (int round = 0; round < ROUNDS; round++) {
            long start = System.nanoTime();
            for (int i = 0; i < PRODUCTS_PER_ROUND; i++) {
                a.matMul(b).close();
            }
            best = Math.min(best, System.nanoTime() - start);
        }
        return FLOP * PRODUCTS_PER_ROUND / best;
    }
}
