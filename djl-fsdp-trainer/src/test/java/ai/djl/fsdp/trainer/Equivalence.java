package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;

/**
 * Compares an FSDP run with a reference run of the same training, within a bound measured from the
 * float32 noise of that very computation rather than a fixed constant: float results differ in the
 * last bits between CPUs and between libtorch's kernel sets ({@code ATEN_CPU_CAPABILITY}), and that
 * difference grows with each optimizer step, differently for every scenario. See docs/fsdp.md.
 */
final class Equivalence {

    /**
     * How many times the measured noise an FSDP run may differ by. FSDP reorders the same sums
     * (per-rank matrix products, reduce-scatter and all-reduce across ranks, sharded norms) more
     * ways than one split of the batch does, so its error is the same kind but not the same draw.
     */
    static final double NOISE_MULTIPLE = 20;

    /**
     * The least bound: 64 units in the last place of float32 ({@code 64 * 2^-24}), for a scenario
     * whose reordered reference happened to agree to the last bit.
     */
    static final double FLOOR = 64 * Math.ulp(1f) / 2;

    private Equivalence() {}

    /**
     * The largest relative errors allowed, for the losses and for the parameters.
     *
     * @param loss the bound on each step's relative loss error
     * @param parameter the bound on each parameter's relative error (L2 norms)
     */
    record Bound(double loss, double parameter) {

        /** For what must agree to the bit: a checkpoint read back. */
        static final Bound EXACT = new Bound(0, 0);

        /**
         * The bound from a reference and the same reference with its sums reordered: {@link
         * #NOISE_MULTIPLE} times their largest difference, at least {@link #FLOOR}.
         */
        static Bound of(
                double[] losses,
                double[] reorderedLosses,
                Map<String, float[]> parameters,
                Map<String, float[]> reorderedParameters) {
            double loss = 0;
            for (int step = 0; step < losses.length; step++) {
                loss = Math.max(loss, lossError(losses[step], reorderedLosses[step]));
            }
            double parameter = 0;
            for (Map.Entry<String, float[]> entry : parameters.entrySet()) {
                parameter =
                        Math.max(
                                parameter,
                                parameterError(
                                        entry.getValue(), reorderedParameters.get(entry.getKey())));
            }
            return new Bound(
                    Math.max(FLOOR, NOISE_MULTIPLE * loss),
                    Math.max(FLOOR, NOISE_MULTIPLE * parameter));
        }
    }

    static void assertSameTraining(
            String what,
            Bound bound,
            double[] referenceLosses,
            double[] fsdpLosses,
            Map<String, float[]> referenceParameters,
            Map<String, float[]> fsdpParameters) {
        assertEquals(referenceLosses.length, fsdpLosses.length, what + ": number of steps");
        double worstLoss = 0;
        for (int step = 0; step < referenceLosses.length; step++) {
            double error = lossError(referenceLosses[step], fsdpLosses[step]);
            worstLoss = Math.max(worstLoss, error);
            assertTrue(
                    error <= bound.loss(),
                    what
                            + ": step "
                            + step
                            + " loss "
                            + fsdpLosses[step]
                            + " vs reference "
                            + referenceLosses[step]
                            + ", relative error "
                            + error
                            + " above the noise bound "
                            + bound.loss());
        }
        assertEquals(referenceParameters.keySet(), fsdpParameters.keySet(), what + ": names");
        double worstParameter = 0;
        for (Map.Entry<String, float[]> entry : referenceParameters.entrySet()) {
            float[] expected = entry.getValue();
            float[] actual = fsdpParameters.get(entry.getKey());
            assertEquals(expected.length, actual.length, what + ": size of " + entry.getKey());
            double error = parameterError(expected, actual);
            worstParameter = Math.max(worstParameter, error);
            assertTrue(
                    error <= bound.parameter(),
                    what
                            + ": parameter "
                            + entry.getKey()
                            + " relative error "
                            + error
                            + " above the noise bound "
                            + bound.parameter());
        }
        System.err.printf(
                "EQUIV %s: loss %.3g / %.3g, parameters %.3g / %.3g%n",
                what, worstLoss, bound.loss(), worstParameter, bound.parameter());
    }

    private static double lossError(double expected, double actual) {
        return Math.abs(actual - expected) / Math.abs(expected);
    }

    /** The L2 norm of the difference over the L2 norm of {@code expected}. */
    private static double parameterError(float[] expected, float[] actual) {
        double difference = 0;
        double norm = 0;
        for (int i = 0; i < expected.length; i++) {
            difference += Math.pow(actual[i] - expected[i], 2);
            norm += Math.pow(expected[i], 2);
        }
        return Math.sqrt(difference / Math.max(norm, 1e-30));
    }
}
