package ai.djl.fsdp.tensor.op;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * libtorch's fused tanh GELU against the same formula in DJL's operators: values and gradients
 * (through autograd, with an output gradient that is not all ones), bfloat16 inputs, and inputs it
 * refuses before they reach C++.
 */
class FusedActivationTest {

    private static final float SQRT_2_OVER_PI = (float) Math.sqrt(2 / Math.PI);

    private NDManager manager;

    @BeforeEach
    void openManager() {
        manager = NDManager.newBaseManager(Device.cpu(), "PyTorch");
        manager.getEngine().setRandomSeed(29);
    }

    @AfterEach
    void closeManager() {
        manager.close();
    }

    @Test
    void valueAndGradientEqualTheComposedFormula() {
        // Wide enough to reach tanh's saturation on both sides, where the forms could part.
        NDArray x = manager.randomNormal(new Shape(4, 7, 33)).mul(3);
        NDArray weights = manager.randomNormal(new Shape(4, 7, 33));
        NDArray[] fused = valueAndGradient(x, weights, FusedActivation::geluTanh);
        NDArray[] composed = valueAndGradient(x, weights, FusedActivationTest::composed);
        for (int i = 0; i < fused.length; i++) {
            float diff = fused[i].sub(composed[i]).abs().max().getFloat();
            float scale = composed[i].abs().max().getFloat();
            assertTrue(
                    diff <= 2e-6f * scale, (i == 0 ? "value" : "gradient") + " differs by " + diff);
        }
        assertTrue(fused[1].abs().sum().getFloat() > 0, "the gradient reached the input");
    }

    @Test
    void outsideAGraphItComputesTheSameValue() {
        NDArray x = manager.randomNormal(new Shape(5));
        NDArray y = FusedActivation.geluTanh(x);
        assertEquals(x.getShape(), y.getShape());
        assertEquals(DataType.FLOAT32, y.getDataType());
        float diff = y.sub(composed(x)).abs().max().getFloat();
        assertTrue(diff < 1e-6f, "differs by " + diff);
    }

    @Test
    void theFallbackEqualsTheFusedKernel() {
        String arch = System.getProperty("os.arch");
        assertEquals(
                System.getProperty("os.name").startsWith("Linux")
                        && ("amd64".equals(arch) || "x86_64".equals(arch)),
                FusedActivation.isFused(),
                "the fused call is taken exactly on Linux x86-64");
        NDArray x = manager.randomNormal(new Shape(4, 7, 33)).mul(3);
        NDArray weights = manager.randomNormal(new Shape(4, 7, 33));
        NDArray[] fused = valueAndGradient(x, weights, FusedActivation::geluTanh);
        NDArray[] fallback = valueAndGradient(x, weights, FusedActivation::composedGeluTanh);
        for (int i = 0; i < fused.length; i++) {
            float diff = fused[i].sub(fallback[i]).abs().max().getFloat();
            float scale = fallback[i].abs().max().getFloat();
            assertTrue(diff <= 2e-6f * scale, "differs by " + diff);
        }
        NDArray reduced = FusedActivation.composedGeluTanh(Precision.BFLOAT16.cast(x));
        assertEquals(Precision.BFLOAT16, Precision.ofArray(reduced), "keeps bfloat16");
    }

    @Test
    void bfloat16InputGivesBfloat16NearFloat32() {
        NDArray x = manager.randomNormal(new Shape(64)).mul(2);
        NDArray reduced = FusedActivation.geluTanh(Precision.BFLOAT16.cast(x));
        assertEquals(Precision.BFLOAT16, Precision.ofArray(reduced));
        NDArray exact = FusedActivation.geluTanh(x);
        float error = Precision.FLOAT32.cast(reduced).sub(exact).abs().max().getFloat();
        float scale = exact.abs().max().getFloat();
        // A bfloat16 rounding of the input and one of the output: a few 2^-8 of the scale.
        assertTrue(error < scale * 4 / 256, "error " + error + " of " + scale);
    }

    @Test
    void integerInputIsRefused() {
        NDArray x = manager.arange(4);
        IllegalArgumentException error =
                assertThrows(IllegalArgumentException.class, () -> FusedActivation.geluTanh(x));
        assertTrue(error.getMessage().contains("floating-point"), error.getMessage());
    }

    /** {@code 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))} in DJL's operators. */
    private static NDArray composed(NDArray x) {
        NDArray inner = x.add(x.pow(3).mul(0.044715f)).mul(SQRT_2_OVER_PI);
        return x.mul(0.5f).mul(inner.tanh().add(1));
    }

    /** Returns {@code f(x)} and the gradient of {@code sum(f(x) * weights)} at {@code x}. */
    private static NDArray[] valueAndGradient(
            NDArray x, NDArray weights, UnaryOperator<NDArray> f) {
        NDArray leaf = x.duplicate();
        leaf.setRequiresGradient(true);
        NDArray y;
        try (GradientCollector collector = Engine.getInstance().newGradientCollector()) {
            y = f.apply(leaf);
            collector.backward(y.mul(weights).sum());
        }
        return new NDArray[] {y.stopGradient(), leaf.getGradient()};
    }
}
