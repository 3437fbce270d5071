package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;

/** Compares an FSDP run with the reference run: float32, relative error at most 1e-5. */
final class Equivalence {

    static final double TOLERANCE = 1e-5;

    private Equivalence() {}

    static void assertSameTraining(
            String what,
            double[] referenceLosses,
            double[] fsdpLosses,
            Map<String, float[]> referenceParameters,
            Map<String, float[]> fsdpParameters) {
        assertEquals(referenceLosses.length, fsdpLosses.length, what + ": number of steps");
        for (int step = 0; step < referenceLosses.length; step++) {
            double error =
                    Math.abs(fsdpLosses[step] - referenceLosses[step])
                            / Math.abs(referenceLosses[step]);
            assertTrue(
                    error <= TOLERANCE,
                    what
                            + ": step "
                            + step
                            + " loss "
                            + fsdpLosses[step]
                            + " vs reference "
                            + referenceLosses[step]);
        }
        assertEquals(referenceParameters.keySet(), fsdpParameters.keySet(), what + ": names");
        for (Map.Entry<String, float[]> entry : referenceParameters.entrySet()) {
            float[] expected = entry.getValue();
            float[] actual = fsdpParameters.get(entry.getKey());
            assertEquals(expected.length, actual.length, what + ": size of " + entry.getKey());
            double difference = 0;
            double norm = 0;
            for (int i = 0; i < expected.length; i++) {
                difference += Math.pow(actual[i] - expected[i], 2);
                norm += Math.pow(expected[i], 2);
            }
            double error = Math.sqrt(difference / Math.max(norm, 1e-30));
            assertTrue(
                    error <= TOLERANCE,
                    what + ": parameter " + entry.getKey() + " relative error " + error);
        }
    }
}
