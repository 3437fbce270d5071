package ai.djl.fsdp.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import java.nio.ByteBuffer;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Arrays of the reduced precisions made and cast through the shim. Tolerances: one rounding of a
 * value errs by at most 2^-8 relative in bfloat16 (8 significant bits) and 2^-11 in float16; a
 * product of K-term dot products whose operands were rounded errs by about twice that relative to
 * the magnitude of the terms (the sums are accumulated in float32), checked against 2^-7 and 2^-10
 * of the largest |a||b| row-column product.
 */
class PrecisionTest {

    private NDManager manager;

    @BeforeEach
    void openManager() {
        manager = NDManager.newBaseManager(Device.cpu(), "PyTorch");
        manager.getEngine().setRandomSeed(11);
    }

    @AfterEach
    void closeManager() {
        manager.close();
    }

    @ParameterizedTest
    @EnumSource(
            value = Precision.class,
            names = {"BFLOAT16", "FLOAT16"})
    void reducedMatMulIsWithinRoundingOfFloat32(Precision precision) {
        NDArray a = manager.randomNormal(new Shape(64, 96));
        NDArray b = manager.randomNormal(new Shape(96, 48));
        NDArray exact = a.matMul(b);

        NDArray product = precision.cast(a).matMul(precision.cast(b));
        assertEquals(precision, Precision.ofArray(product));
        NDArray back = Precision.cast(product, DataType.FLOAT32);
        float scale = a.abs().matMul(b.abs()).max().getFloat();
        float error = back.sub(exact).abs().max().getFloat();
        float tolerance = precision == Precision.BFLOAT16 ? 1f / 128 : 1f / 1024;
        assertTrue(error <= tolerance * scale, "error " + error + " of scale " + scale);
        assertTrue(error > 0, "the product was not computed in " + precision);
    }

    /**
     * One value's bits equal libtorch's cast of it, bit for bit, over every exponent float32 has
     * (random bit patterns) and the edges: ties, float16's subnormals and overflow, infinities and
     * signed zeros.
     */
    @ParameterizedTest
    @EnumSource(Precision.class)
    void bitsOfAValueAreTheCastsBits(Precision precision) {
        Random random = new Random(5);
        float[] values = new float[1 << 16];
        float[] edges = {
            0f,
            -0f,
            1f,
            -1f,
            65504f,
            65519.996f,
            65520f,
            -65520f,
            0x1p-24f,
            0x1p-25f,
            0x1.8p-25f,
            0x1p-14f,
            0x1.ffcp-15f,
            1 + 0x1p-8f,
            1 + 0x1p-11f,
            1 + 0x3p-11f,
            Float.MAX_VALUE,
            Float.MIN_VALUE,
            Float.POSITIVE_INFINITY,
            Float.NEGATIVE_INFINITY
        };
        System.arraycopy(edges, 0, values, 0, edges.length);
        for (int i = edges.length; i < values.length; i++) {
            float value;
            do {
                value = Float.intBitsToFloat(random.nextInt());
            } while (Float.isNaN(value));
            values[i] = value;
        }
        NDArray cast = precision.cast(manager.create(values));
        ByteBuffer memory = TensorMemory.hostBuffer(cast, "cast");
        for (int i = 0; i < values.length; i++) {
            int expected =
                    precision == Precision.FLOAT32
                            ? memory.getInt(4 * i)
                            : Short.toUnsignedInt(memory.getShort(2 * i));
            assertEquals(
                    expected,
                    precision.bits(values[i]),
                    "bits of " + values[i] + " in " + precision);
        }
    }

    @Test
    void roundTripsKeepWhatTheFormatHolds() {
        float[] values = {0f, 1f, -2.5f, 3.140625f, 65504f, 1e-3f, 1e30f, -7.0e-20f};
        NDArray source = manager.create(values);
        // Each step rounds to nearest: relative error within half an ulp of the narrower format.
        for (Precision precision : new Precision[] {Precision.BFLOAT16, Precision.FLOAT16}) {
            NDArray reduced = precision.cast(source);
            float[] back = Precision.cast(reduced, DataType.FLOAT32).toFloatArray();
            float ulp = precision == Precision.BFLOAT16 ? 1f / 256 : 1f / 2048;
            for (int i = 0; i < values.length; i++) {
                boolean representable =
                        precision == Precision.BFLOAT16 || Math.abs(values[i]) <= 65504f;
                boolean normal = precision == Precision.BFLOAT16 || Math.abs(values[i]) >= 6.1e-5f;
                if (representable && normal) {
                    assertEquals(values[i], back[i], Math.abs(values[i]) * ulp, "value " + i);
                }
            }
            // Narrow -> float32 -> narrow is exact.
            NDArray again = precision.cast(Precision.FLOAT32.cast(reduced));
            assertArrayEquals(
                    Precision.FLOAT32.cast(reduced).toFloatArray(),
                    Precision.FLOAT32.cast(again).toFloatArray());
        }
        // bfloat16 <-> float16 goes through the shim both ways.
        NDArray half = Precision.FLOAT16.cast(Precision.BFLOAT16.cast(manager.create(3.140625f)));
        assertEquals(Precision.FLOAT16, Precision.ofArray(half));
        assertEquals(3.140625f, Precision.FLOAT32.cast(half).getFloat());
    }

    @Test
    void castIsDifferentiable() {
        NDArray x = manager.randomNormal(new Shape(8, 16));
        NDArray w = manager.randomNormal(new Shape(16, 4));
        x.setRequiresGradient(true);
        try (GradientCollector collector = Engine.getInstance().newGradientCollector()) {
            NDArray y = Precision.BFLOAT16.cast(x).matMul(Precision.BFLOAT16.cast(w));
            collector.backward(Precision.cast(y, DataType.FLOAT32).sum());
        }
        // d(sum(x w))/dx = row sums of w, for every row of x.
        NDArray expected = w.sum(new int[] {1}).reshape(1, 16).broadcast(8, 16);
        float error = x.getGradient().sub(expected).abs().max().getFloat();
        float scale = w.abs().sum(new int[] {1}).max().getFloat();
        assertTrue(error <= scale / 128, "gradient error " + error);
        assertEquals(DataType.FLOAT32, x.getGradient().getDataType());
    }

    @Test
    void castOfTheSameTypeIsTheArrayAndOtherTypesGoThroughDjl() {
        NDArray bf16 = Precision.BFLOAT16.cast(manager.arange(0f, 4f, 1f));
        assertSame(bf16, Precision.cast(bf16, DataType.BFLOAT16));
        NDArray longs = Precision.cast(bf16, DataType.INT64);
        assertArrayEquals(new long[] {0, 1, 2, 3}, longs.toLongArray());
        assertNull(Precision.ofArray(longs));
    }

    @Test
    void toDeviceKeepsBfloat16BitsAndLeavesDjlTypesToDjl() {
        NDArray bf16 = Precision.BFLOAT16.cast(manager.randomNormal(new Shape(3, 7)));
        assertSame(bf16, Precision.toDevice(bf16, Device.cpu(), false));
        NDArray copy = Precision.toDevice(bf16, Device.cpu(), true);
        assertNotSame(bf16, copy);
        assertEquals(Precision.BFLOAT16, Precision.ofArray(copy));
        assertEquals(new Shape(3, 7), copy.getShape());
        // bfloat16 -> float32 is exact, so equal float32 bits are equal bfloat16 bits.
        assertArrayEquals(
                Precision.FLOAT32.cast(bf16).toFloatArray(),
                Precision.FLOAT32.cast(copy).toFloatArray());
        NDArray floats = manager.arange(0f, 4f, 1f);
        assertSame(floats, Precision.toDevice(floats, Device.cpu(), false));
        NDArray floatCopy = Precision.toDevice(floats, Device.cpu(), true);
        assertArrayEquals(floats.toFloatArray(), floatCopy.toFloatArray());
        // A copy owns its memory: DJL's own toDevice(device, true) returns an alias on the
        // array's device, and an asynchronous checkpoint's snapshot then saw later steps.
        floats.addi(10f);
        bf16.addi(Precision.BFLOAT16.cast(manager.ones(new Shape(3, 7))));
        assertArrayEquals(new float[] {0f, 1f, 2f, 3f}, floatCopy.toFloatArray());
        assertTrue(
                Precision.FLOAT32
                                .cast(bf16)
                                .sub(Precision.FLOAT32.cast(copy))
                                .abs()
                                .min()
                                .getFloat()
                        > 0.5f);
    }

    @Test
    void toDeviceMovesBfloat16BetweenHostAndGpu() {
        Assumptions.assumeTrue(
                Engine.getEngine("PyTorch").getGpuCount() > 0,
                "no CUDA device: the host <-> GPU move of a bfloat16 array needs one");
        NDArray bf16 = Precision.BFLOAT16.cast(manager.randomNormal(new Shape(5, 3)));
        NDArray onGpu = Precision.toDevice(bf16, Device.gpu(), false);
        assertEquals(Device.gpu(), onGpu.getDevice());
        assertEquals(Precision.BFLOAT16, Precision.ofArray(onGpu));
        NDArray back = Precision.toDevice(onGpu, Device.cpu(), false);
        assertEquals(Device.cpu(), back.getDevice());
        assertArrayEquals(
                Precision.FLOAT32.cast(bf16).toFloatArray(),
                Precision.FLOAT32.cast(back).toFloatArray());
    }

    @Test
    void zerosAreZeros() {
        NDArray zeros = Precision.BFLOAT16.zeros(manager, new Shape(3, 5));
        assertEquals(new Shape(3, 5), zeros.getShape());
        assertEquals(0f, Precision.FLOAT32.cast(zeros).abs().sum().getFloat());
        assertEquals(2, Precision.BFLOAT16.getBytes());
    }

    @Test
    void guardThrowsWhereDjlWouldAbort() {
        NDArray bf16 = Precision.BFLOAT16.cast(manager.ones(new Shape(2)));
        // DJL reads a bfloat16 array's type as UNKNOWN; neither may reach a DJL creation call.
        IllegalArgumentException unknown =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> Precision.djlType(bf16.getDataType(), "gradient buffer"));
        assertTrue(unknown.getMessage().contains("gradient buffer"), unknown.getMessage());
        assertTrue(unknown.getMessage().contains("Precision"), unknown.getMessage());
        assertThrows(
                IllegalArgumentException.class,
                () -> Precision.djlType(DataType.BFLOAT16, "shard"));
        assertThrows(IllegalArgumentException.class, () -> Precision.cast(bf16, DataType.UNKNOWN));
        assertEquals(DataType.FLOAT16, Precision.djlType(DataType.FLOAT16, "x"));
        assertThrows(IllegalArgumentException.class, () -> Precision.of(DataType.INT32));
    }

    @Test
    void namesParse() {
        assertEquals(Precision.BFLOAT16, Precision.of("bf16"));
        assertEquals(Precision.FLOAT16, Precision.of("Float16"));
        assertEquals(Precision.FLOAT32, Precision.of("no"));
        IllegalArgumentException error =
                assertThrows(IllegalArgumentException.class, () -> Precision.of("fp8"));
        assertTrue(error.getMessage().contains("fp32, bf16, fp16"), error.getMessage());
    }
}
