package ai.djl.fsdp.internal.runtime;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import ai.djl.fsdp.internal.param.FlatLayout;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.fsdp.tensor.op.Autograd;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.util.List;
import org.junit.jupiter.api.Test;

class GradientLeavesTest {

    @Test
    void eachParameterIsAViewOfTheBufferLeafAndTheFlatGradientHasZerosWhereNoneArrived() {
        // [2, 2] and [3] over 2 shards: 7 elements padded to 8.
        FlatLayout layout = new FlatLayout(List.of(new Shape(2, 2), new Shape(3)), 2);
        try (NDManager manager = NDManager.newBaseManager()) {
            NDArray base = manager.arange(0f, 8f);
            GradientLeaves leaves = GradientLeaves.ofBuffer(layout, base, manager);
            NDArray first = leaves.views().get(0);
            assertEquals(new Shape(2, 2), first.getShape());
            assertEquals(TensorMemory.dataPointer(base), TensorMemory.dataPointer(first));
            // Only the first parameter is used: the second and the padding get zeros.
            NDArray loss = Autograd.withGradMode(true, () -> first.mul(first).sum());
            Autograd.backward(loss, loss.onesLike());
            NDArray flat = leaves.flatGradient(Precision.FLOAT32, manager);
            assertArrayEquals(new float[] {0, 2, 4, 6, 0, 0, 0, 0}, flat.toFloatArray());
        }
    }

    @Test
    void bfloat16GradientsBecomeOneFloat32FlatGradient() {
        // [2, 2] and [4] over 2 shards: 8 elements, no padding; and [2, 2], [3]: one padded.
        for (FlatLayout layout :
                List.of(
                        new FlatLayout(List.of(new Shape(2, 2), new Shape(4)), 2),
                        new FlatLayout(List.of(new Shape(2, 2), new Shape(3)), 2))) {
            try (NDManager manager = NDManager.newBaseManager()) {
                NDArray base = Precision.BFLOAT16.cast(manager.arange(0f, 8f));
                GradientLeaves leaves = GradientLeaves.ofBuffer(layout, base, manager);
                NDArray first = leaves.views().get(0);
                NDArray second = leaves.views().get(1);
                NDArray loss =
                        Autograd.withGradMode(
                                true,
                                () ->
                                        Precision.FLOAT32.cast(
                                                first.mul(first).sum().add(second.sum())));
                Autograd.backward(loss, loss.onesLike());
                NDArray flat = leaves.flatGradient(Precision.FLOAT32, manager);
                assertEquals(Precision.FLOAT32, Precision.ofArray(flat));
                float[] expected =
                        layout.getPaddedNumel() > layout.getNumel()
                                ? new float[] {0, 2, 4, 6, 1, 1, 1, 0}
                                : new float[] {0, 2, 4, 6, 1, 1, 1, 1};
                assertArrayEquals(expected, flat.toFloatArray());
            }
        }
    }

    @Test
    void aUnitOfOneParameterGetsTheLeafsGradientItselfOrOneCastOfIt() {
        // [2, 2] over 2 shards, no padding: in float32 the flat gradient is the leaf's own, not a
        // copy; from bfloat16, one cast.
        FlatLayout layout = new FlatLayout(List.of(new Shape(2, 2)), 2);
        for (Precision buffer : List.of(Precision.FLOAT32, Precision.BFLOAT16)) {
            try (NDManager manager = NDManager.newBaseManager()) {
                NDArray base = buffer.cast(manager.arange(0f, 4f));
                GradientLeaves leaves = GradientLeaves.ofBuffer(layout, base, manager);
                NDArray weight = leaves.views().get(0);
                NDArray loss =
                        Autograd.withGradMode(
                                true, () -> Precision.FLOAT32.cast(weight.mul(weight).sum()));
                Autograd.backward(loss, loss.onesLike());

                NDArray flat = leaves.flatGradient(Precision.FLOAT32, manager);

                assertEquals(Precision.FLOAT32, Precision.ofArray(flat));
                assertArrayEquals(new float[] {0, 2, 4, 6}, flat.toFloatArray());
                NDArray gradient = Autograd.gradientOf(base);
                if (buffer == Precision.FLOAT32) {
                    assertEquals(
                            TensorMemory.dataPointer(gradient), TensorMemory.dataPointer(flat));
                } else {
                    assertNotEquals(
                            TensorMemory.dataPointer(gradient), TensorMemory.dataPointer(flat));
                }
            }
        }
    }

    @Test
    void aBufferNoGradientReachedGivesAllZeros() {
        FlatLayout layout = new FlatLayout(List.of(new Shape(2, 2), new Shape(3)), 2);
        try (NDManager manager = NDManager.newBaseManager()) {
            NDArray base = manager.arange(0f, 8f);
            GradientLeaves leaves = GradientLeaves.ofBuffer(layout, base, manager);
            assertNull(Autograd.gradientOf(base));

            NDArray flat = leaves.flatGradient(Precision.FLOAT32, manager);

            assertArrayEquals(new float[8], flat.toFloatArray());
        }
    }

    @Test
    void gradientsOverTwoBackwardCallsAddUpInEitherForm() {
        // [2, 2] and [3] over 2 shards: the first call reaches the first parameter, the second
        // both; the padding stays zero.
        FlatLayout layout = new FlatLayout(List.of(new Shape(2, 2), new Shape(3)), 2);
        for (boolean perParameter : new boolean[] {false, true}) {
            try (NDManager manager = NDManager.newBaseManager()) {
                NDArray base = manager.arange(0f, 8f);
                GradientLeaves leaves =
                        perParameter
                                ? GradientLeaves.ofParameters(layout, base, manager)
                                : GradientLeaves.ofBuffer(layout, base, manager);
                NDArray first = leaves.views().get(0);
                NDArray second = leaves.views().get(1);
                NDArray once = Autograd.withGradMode(true, () -> first.mul(first).sum());
                Autograd.backward(once, once.onesLike());
                NDArray twice = Autograd.withGradMode(true, () -> first.sum().add(second.sum()));
                Autograd.backward(twice, twice.onesLike());

                NDArray flat = leaves.flatGradient(Precision.FLOAT32, manager);

                assertArrayEquals(
                        new float[] {1, 3, 5, 7, 1, 1, 1, 0},
                        flat.toFloatArray(),
                        perParameter ? "per parameter" : "buffer");
            }
        }
    }

    @Test
    void theRootsFormCopiesAOnePieceGradientOnce() {
        // [2, 2] over 2 shards, no padding: the flat gradient is the one gradient, copied once.
        FlatLayout layout = new FlatLayout(List.of(new Shape(2, 2)), 2);
        try (NDManager manager = NDManager.newBaseManager()) {
            GradientLeaves leaves =
                    GradientLeaves.ofParameters(layout, manager.arange(0f, 4f), manager);
            NDArray weight = leaves.views().get(0);
            NDArray loss = Autograd.withGradMode(true, () -> weight.mul(weight).sum());
            Autograd.backward(loss, loss.onesLike());

            NDArray flat = leaves.flatGradient(Precision.FLOAT32, manager);

            assertArrayEquals(new float[] {0, 2, 4, 6}, flat.toFloatArray());
            NDArray gradient = Autograd.gradientOf(weight);
            assertNotEquals(TensorMemory.dataPointer(gradient), TensorMemory.dataPointer(flat));
        }
    }
}
