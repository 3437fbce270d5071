package ai.djl.fsdp.quant;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * What the package promises beyond bitsandbytes' bytes: a rank quantizing only its own run of
 * blocks writes the bytes and scales the whole weight's quantization holds there, decoding errs by
 * at most half a code step of the block's scale, and bad input fails with one line naming it.
 */
class BlockQuantizerTest {

    @Test
    void runsOfBlocksQuantizeAsTheWholeWeight() {
        float[] values = normal(64 * 10 + 17, 3);
        for (QuantType type : QuantType.values()) {
            QuantConfig config = QuantConfig.builder().setQuantType(type).build();
            QuantizedWeight whole =
                    QuantizedWeight.quantize(values, new long[] {values.length}, config);
            byte[] packed = new byte[whole.getPacked().length];
            float[] absmax = new float[whole.getAbsmax().length];
            int[] runStarts = {0, 3, 4, 9, 11}; // in blocks; the last run is partial
            for (int r = 0; r + 1 < runStarts.length; r++) {
                int from = runStarts[r] * 64;
                int count = Math.min(runStarts[r + 1] * 64, values.length) - from;
                BlockQuantizer.quantize4(
                        type, 64, values, from, count, packed, from / 2, absmax, runStarts[r]);
            }
            assertArrayEquals(whole.getPacked(), packed, type.getName());
            assertArrayEquals(whole.getAbsmax(), absmax, type.getName());
            float[] run = new float[64 * 5];
            BlockQuantizer.dequantize4(type, 64, packed, 4 * 32, absmax, 4, run, 0, run.length);
            assertArrayEquals(
                    Arrays.copyOfRange(whole.dequantize(), 4 * 64, 9 * 64), run, type.getName());
        }
    }

    @Test
    void decodingErrsByAtMostHalfACodeStep() {
        float[] values = normal(64 * 40 + 1, 5);
        for (QuantType type : QuantType.values()) {
            for (boolean nested : new boolean[] {false, true}) {
                QuantConfig config =
                        QuantConfig.builder().setQuantType(type).optNested(nested).build();
                QuantizedWeight weight =
                        QuantizedWeight.quantize(values, new long[] {values.length}, config);
                float[] decoded = weight.dequantize();
                float[] scales = weight.getAbsmax();
                float step = largestStep(type);
                for (int i = 0; i < values.length; i++) {
                    float scale = scales[i / 64];
                    // Nested scales are themselves coded in 8 bits: allow their relative error.
                    float bound = scale * step / 2 * 1.0001f + (nested ? scale * 0.05f : 0f);
                    assertTrue(
                            Math.abs(decoded[i] - values[i]) <= bound,
                            type + " nested " + nested + " element " + i);
                }
            }
        }
    }

    @Test
    void badInputFailsNamingIt() {
        QuantConfig nf4 = QuantConfig.builder().setQuantType(QuantType.NF4).build();
        String message =
                assertThrows(
                                IllegalArgumentException.class,
                                () ->
                                        QuantizedWeight.quantize(
                                                new float[] {1f, Float.NaN}, new long[] {2}, nf4))
                        .getMessage();
        assertTrue(message.contains("not finite") && message.contains("element 1"), message);
        message =
                assertThrows(IllegalArgumentException.class, () -> QuantType.of("int8"))
                        .getMessage();
        assertTrue(message.contains("int8") && message.contains("nf4 or fp4"), message);
        message =
                assertThrows(
                                IllegalArgumentException.class,
                                () ->
                                        QuantConfig.builder()
                                                .setQuantType(QuantType.FP4)
                                                .optBlockSize(48)
                                                .build())
                        .getMessage();
        assertTrue(message.contains("48"), message);
        message =
                assertThrows(
                                IllegalArgumentException.class,
                                () ->
                                        QuantizedWeight.of(
                                                new long[] {4, 33},
                                                nf4,
                                                new byte[66],
                                                new float[2]))
                        .getMessage();
        assertTrue(message.contains("[4, 33]") && message.contains("3 block scales"), message);
        message =
                assertThrows(
                                IllegalArgumentException.class,
                                () ->
                                        new NestedScales(
                                                new byte[300], new float[2], new float[255], 0f))
                        .getMessage();
        assertTrue(message.contains("nested_quant_map"), message);
        assertEquals(QuantType.FP4, QuantType.of("FP4"));
    }

    private static float largestStep(QuantType type) {
        float[] sorted = type.getCode();
        Arrays.sort(sorted);
        float step = 0;
        for (int i = 0; i + 1 < sorted.length; i++) {
            step = Math.max(step, sorted[i + 1] - sorted[i]);
        }
        return step;
    }

    private static float[] normal(int count, long seed) {
        Random random = new Random(seed);
        float[] values = new float[count];
        for (int i = 0; i < count; i++) {
            values[i] = (float) random.nextGaussian() * 0.02f;
        }
        return values;
    }
}
