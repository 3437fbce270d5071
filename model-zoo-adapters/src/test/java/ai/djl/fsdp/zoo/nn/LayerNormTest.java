package ai.djl.fsdp.zoo.nn;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import ai.djl.training.ParameterStore;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The layer norm, forward and backward, against float64 from the same inputs (rounded to the
 * compute type first). A 16-bit input is normalized in one libtorch operator of its own type, which
 * computes in float32 and rounds once: so within 2^-7 of the largest value in bfloat16 and float16
 * (one rounding, 2^-8 or 2^-11 relative, with room for libtorch's float32 sums), 1e-5 in float32.
 */
class LayerNormTest {

    private static final int ROWS = 6;
    private static final int DIM = 48;
    private static final float EPS = 1e-5f;

    @ParameterizedTest
    @EnumSource(
            value = Precision.class,
            names = {"FLOAT32", "BFLOAT16", "FLOAT16"})
    void matchesFloat64ForwardAndBackward(Precision precision) {
        try (NDManager manager = TestModels.newManager()) {
            Engine.getEngine("PyTorch").setRandomSeed(11);
            LayerNorm norm = new LayerNorm(DIM, EPS);
            norm.initialize(manager, DataType.FLOAT32, new Shape(ROWS, DIM));
            NDArray weight = norm.getParameters().get("weight").getArray();
            NDArray bias = norm.getParameters().get("bias").getArray();
            // Parameters in the compute type's values, as an all-gather in that type gives them.
            weight.set(
                    rounded(manager.randomNormal(new Shape(DIM)).add(1), precision).toFloatArray());
            bias.set(rounded(manager.randomNormal(new Shape(DIM)), precision).toFloatArray());
            NDArray x32 = manager.randomNormal(1f, 3f, new Shape(2, 3, DIM), DataType.FLOAT32);
            NDArray x = precision.cast(x32);
            x.setRequiresGradient(true);
            NDArray g = rounded(manager.randomNormal(x.getShape()), precision);
            NDArray y;
            try (GradientCollector collector = Engine.getEngine("PyTorch").newGradientCollector()) {
                y = norm.forward(new ParameterStore(manager, false), new NDList(x), true).head();
                collector.backward(Precision.FLOAT32.cast(y).mul(g).sum());
            }
            assertTrue(Precision.ofArray(y) == precision, "the output keeps the input's type");
            Reference expected =
                    reference(toDoubles(x), toDoubles(weight), toDoubles(bias), toDoubles(g));
            float tolerance = precision == Precision.FLOAT32 ? 1e-5f : 1f / 128;
            check("output", expected.y(), toDoubles(y), tolerance);
            check("input gradient", expected.dx(), toDoubles(x.getGradient()), tolerance);
            check("weight gradient", expected.dw(), toDoubles(weight.getGradient()), tolerance);
            check("bias gradient", expected.db(), toDoubles(bias.getGradient()), tolerance);
        }
    }

    private record Reference(double[] y, double[] dx, double[] dw, double[] db) {}

    /** Layer norm over rows of DIM and its gradients for an output gradient g, in float64. */
    private static Reference reference(double[] x, double[] w, double[] b, double[] g) {
        int rows = x.length / DIM;
        double[] y = new double[x.length];
        double[] dx = new double[x.length];
        double[] dw = new double[DIM];
        double[] db = new double[DIM];
        for (int r = 0; r < rows; r++) {
            int o = r * DIM;
            double mean = 0;
            for (int i = 0; i < DIM; i++) {
                mean += x[o + i] / DIM;
            }
            double variance = 0;
            for (int i = 0; i < DIM; i++) {
                variance += (x[o + i] - mean) * (x[o + i] - mean) / DIM;
            }
            double rstd = 1 / Math.sqrt(variance + EPS);
            double[] normalized = new double[DIM];
            double meanDn = 0;
            double meanDnX = 0;
            for (int i = 0; i < DIM; i++) {
                normalized[i] = (x[o + i] - mean) * rstd;
                y[o + i] = normalized[i] * w[i] + b[i];
                double dn = g[o + i] * w[i];
                meanDn += dn / DIM;
                meanDnX += dn * normalized[i] / DIM;
                dw[i] += g[o + i] * normalized[i];
                db[i] += g[o + i];
            }
            for (int i = 0; i < DIM; i++) {
                dx[o + i] = rstd * (g[o + i] * w[i] - meanDn - normalized[i] * meanDnX);
            }
        }
        return new Reference(y, dx, dw, db);
    }

    private static void check(String what, double[] expected, double[] actual, float tolerance) {
        double largest = 0;
        double worst = 0;
        for (int i = 0; i < expected.length; i++) {
            largest = Math.max(largest, Math.abs(expected[i]));
            worst = Math.max(worst, Math.abs(expected[i] - actual[i]));
        }
        assertTrue(
                worst <= tolerance * largest,
                what + " differs by " + worst + " against a largest value of " + largest);
    }

    private static NDArray rounded(NDArray array, Precision precision) {
        return Precision.FLOAT32.cast(precision.cast(array));
    }

    private static double[] toDoubles(NDArray array) {
        float[] values = Precision.FLOAT32.cast(array).toFloatArray();
        double[] doubles = new double[values.length];
        for (int i = 0; i < values.length; i++) {
            doubles[i] = values[i];
        }
        return doubles;
    }
}
