package ai.djl.fsdp.tensor.quant;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The quantizers against a float reference computed here in Java, value by value: every value comes
 * back within half a step of itself ({@code absmax / (2 maxCode)} of its block's largest magnitude:
 * rounded to the nearest level) plus float32's rounding ({@link SymmetricQuantizer#errorBound}: a
 * {@code 2^-21} of absmax, and the smallest denormal in a block of denormals), and a normal value
 * comes back on the block's grid of levels {@code k / maxCode * absmax}. Which of two levels a
 * value exactly between them takes is left to libtorch's kernel, so the checks hold on every CPU
 * (the module's build runs them under the machine's kernels, {@code ATEN_CPU_CAPABILITY=default}
 * and {@code avx2}).
 */
class SymmetricQuantizerTest {

    private NDManager manager;

    @BeforeEach
    void openManager() {
        manager = NDManager.newBaseManager(Device.cpu(), "PyTorch");
    }

    @AfterEach
    void closeManager() {
        manager.close();
    }

    @ParameterizedTest
    @EnumSource(QuantizedBits.class)
    void randomRowsComeBackWithinTheBlockBound(QuantizedBits bits) {
        Random random = new Random(7);
        float[] values = new float[3 * 1000];
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) (random.nextGaussian() * Math.exp(random.nextGaussian()));
        }
        // 1000 is not a multiple of 128: each row's last block is partial.
        checkRoundTrip(bits, 128, values, 3);
    }

    @ParameterizedTest
    @EnumSource(QuantizedBits.class)
    void edgeBlocksComeBackWithinTheBlockBound(QuantizedBits bits) {
        int block = 64;
        float[] values = new float[4 * block + 10];
        // Block 0: zeros. Block 1: one outlier among small values. Block 2: denormals.
        // Block 3: the largest float32 magnitudes. Then a partial block of 10.
        for (int i = 0; i < block; i++) {
            values[block + i] = 1e-3f * (i - 32);
            values[2 * block + i] = Float.MIN_VALUE * (i - 20) * 3;
            values[3 * block + i] = (i % 2 == 0 ? 1 : -1) * Float.MAX_VALUE / (1 + i);
        }
        values[block + 17] = 1e6f;
        for (int i = 0; i < 10; i++) {
            values[4 * block + i] = -0.5f + i * 0.1f;
        }
        float[] back = checkRoundTrip(bits, block, values, 1);
        for (int i = 0; i < block; i++) {
            assertEquals(0f, back[i], "a block of zeros comes back zeros");
        }
        assertEquals(1e6f, back[block + 17], 1e6f * 1e-6f, "the outlier is its block's absmax");
    }

    @Test
    void int4PacksTwoCodesAByteWithTheFirstInTheHighNibble() {
        SymmetricQuantizer quantizer = SymmetricQuantizer.of(QuantizedBits.INT4, 64);
        float[] values = new float[64];
        values[0] = 7;
        values[1] = -7;
        values[2] = 1;
        NDArray rows = manager.create(values, new Shape(1, 64));
        try (QuantizedRows quantized = quantizer.quantize(rows, 1, manager)) {
            assertEquals(32, quantized.codes().size());
            byte[] codes = quantized.codes().toByteArray();
            assertEquals((byte) (15 * 16 + 1), codes[0]);
            assertEquals((byte) (9 * 16 + 8), codes[1]);
            assertArrayEquals(new float[] {7f}, quantized.scales().toFloatArray());
        }
    }

    @ParameterizedTest
    @EnumSource(QuantizedBits.class)
    void aBlockHoldingNanOrAnInfinityComesBackNanAndTheOthersWithinTheirBound(QuantizedBits bits) {
        SymmetricQuantizer quantizer = SymmetricQuantizer.of(bits, 64);
        for (float bad :
                new float[] {Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY}) {
            float[] values = new float[200];
            for (int i = 0; i < values.length; i++) {
                values[i] = (i % 7) - 3f;
            }
            values[150] = bad;
            NDArray rows = manager.create(values, new Shape(2, 100));
            float[] back;
            try (QuantizedRows quantized = quantizer.quantize(rows, 2, manager)) {
                float[] scales = quantized.scales().toFloatArray();
                // Row 1's values 100..163 are its block 0, the array's block 2.
                for (int block = 0; block < scales.length; block++) {
                    assertEquals(block == 2, Float.isNaN(scales[block]), "scale " + block);
                }
                back = quantizer.dequantize(quantized, 100, manager).toFloatArray();
            }
            for (int i = 0; i < values.length; i++) {
                if (i >= 100 && i < 164) {
                    assertTrue(Float.isNaN(back[i]), bad + ": value " + i + " is " + back[i]);
                } else {
                    assertEquals(values[i], back[i], quantizer.errorBound(3));
                }
            }
        }
    }

    @Test
    void blockSizesOutsideTheRangeOrOddAreRefused() {
        for (int size : new int[] {32, 63, 65, 2050, 4096}) {
            IllegalArgumentException e =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> SymmetricQuantizer.of(QuantizedBits.INT8, size));
            assertTrue(e.getMessage().contains("from 64 to 2048"), e::getMessage);
        }
        assertEquals(2048, SymmetricQuantizer.of(QuantizedBits.INT4, 2048).getBlockSize());
    }

    @Test
    void rowBytesCountCodesAndScales() {
        assertEquals(1024 + 4 * 4, SymmetricQuantizer.of(QuantizedBits.INT8, 256).rowBytes(1000));
        assertEquals(512 + 4 * 4, SymmetricQuantizer.of(QuantizedBits.INT4, 256).rowBytes(1000));
        QuantizedRows room =
                SymmetricQuantizer.of(QuantizedBits.INT4, 256).allocate(manager, 3, 1000);
        assertEquals(3 * 512, room.codes().size());
        assertEquals(3 * 4, room.scales().size());
    }

    /** Quantizes and dequantizes, checks every value against its block's bounds, returns them. */
    private float[] checkRoundTrip(QuantizedBits bits, int block, float[] values, int rows) {
        SymmetricQuantizer quantizer = SymmetricQuantizer.of(bits, block);
        int columns = values.length / rows;
        NDArray array = manager.create(values, new Shape(rows, columns));
        float[] back;
        try (QuantizedRows quantized = quantizer.quantize(array, rows, manager)) {
            assertEquals(rows * quantizer.blocksPerRow(columns), quantized.scales().size());
            NDArray restored = quantizer.dequantize(quantized, columns, manager);
            assertEquals(new Shape(rows, columns), restored.getShape());
            back = restored.toFloatArray();
        }
        for (int r = 0; r < rows; r++) {
            for (int start = 0; start < columns; start += block) {
                int end = Math.min(columns, start + block);
                float absmax = 0;
                for (int i = start; i < end; i++) {
                    absmax = Math.max(absmax, Math.abs(values[r * columns + i]));
                }
                int max = bits.getMaxCode();
                double bound = quantizer.errorBound(absmax);
                for (int i = start; i < end; i++) {
                    int at = r * columns + i;
                    String where = "value " + at + " = " + values[at] + " (absmax " + absmax + ")";
                    double error = Math.abs((double) back[at] - values[at]);
                    assertTrue(error <= bound, where + ": " + error + " > " + bound);
                    if (absmax >= Float.MIN_NORMAL) {
                        double level = (double) back[at] / absmax * max;
                        assertEquals(Math.rint(level), level, 1e-4, where);
                    }
                }
            }
        }
        return back;
    }
}
