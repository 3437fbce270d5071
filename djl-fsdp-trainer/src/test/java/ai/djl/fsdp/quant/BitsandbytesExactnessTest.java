package ai.djl.fsdp.quant;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Quantization and dequantization equal, byte for byte and bit for bit, an independent
 * implementation of bitsandbytes' kernels (reference.py beside the expected bytes, in NumPy): NF4
 * and FP4, plain and nested scales, partial last blocks, all-zero blocks, exact ties at every
 * threshold at two scales, and nested blocks of equal scales.
 */
class BitsandbytesExactnessTest {

    private static JsonObject reference;

    @BeforeAll
    static void readReference() throws IOException {
        try (InputStream in =
                BitsandbytesExactnessTest.class.getResourceAsStream("bnb-4bit-reference.json")) {
            assertNotNull(in, "bnb-4bit-reference.json beside reference.py");
            reference =
                    JsonParser.parseReader(new InputStreamReader(in, StandardCharsets.UTF_8))
                            .getAsJsonObject();
        }
    }

    @Test
    void decodeTablesAreTheKernels() {
        JsonObject decode = reference.getAsJsonObject("decode");
        for (QuantType type : QuantType.values()) {
            float[] expected = floats(decode.get(type.getName()).getAsString());
            float[] actual = new float[16];
            for (int nibble = 0; nibble < 16; nibble++) {
                actual[nibble] = type.decode(nibble);
            }
            assertBits(expected, actual, type + " decode");
            assertBits(expected, type.getCode(), type + " code");
        }
    }

    @Test
    void dynamicMapIsBitsandbytes() {
        assertBits(
                floats(reference.get("dynamic_map").getAsString()),
                DynamicMap.signed(),
                "dynamic map");
    }

    @Test
    void quantizedBytesAndValuesAreBitsandbytes() {
        int cases = 0;
        for (var element : reference.getAsJsonArray("cases")) {
            JsonObject c = element.getAsJsonObject();
            String name = c.get("name").getAsString();
            float[] input = floats(c.get("input").getAsString());
            QuantConfig config =
                    QuantConfig.builder()
                            .setQuantType(QuantType.of(c.get("quant_type").getAsString()))
                            .optBlockSize(c.get("blocksize").getAsInt())
                            .optNested(c.get("nested").getAsBoolean())
                            .build();
            QuantizedWeight weight =
                    QuantizedWeight.quantize(input, new long[] {input.length}, config);
            assertArrayEquals(bytes(c.get("packed").getAsString()), weight.getPacked(), name);
            NestedScales nested = weight.getNested();
            if (config.isNested()) {
                assertArrayEquals(bytes(c.get("absmax").getAsString()), nested.getCodes(), name);
                assertBits(floats(c.get("nested_absmax").getAsString()), nested.getAbsmax(), name);
                assertBits(
                        floats(c.get("nested_offset").getAsString()),
                        new float[] {nested.getOffset()},
                        name + " offset");
            } else {
                assertNull(nested, name);
                assertBits(floats(c.get("absmax").getAsString()), weight.getAbsmax(), name);
            }
            assertBits(floats(c.get("dequantized").getAsString()), weight.dequantize(), name);
            cases++;
        }
        assertEquals(5, cases);
    }

    private static void assertBits(float[] expected, float[] actual, String what) {
        assertEquals(expected.length, actual.length, what + ": length");
        for (int i = 0; i < expected.length; i++) {
            int index = i;
            assertEquals(
                    Float.floatToRawIntBits(expected[i]),
                    Float.floatToRawIntBits(actual[i]),
                    () -> what + ": element " + index + " differs");
        }
    }

    private static byte[] bytes(String base64) {
        return Base64.getDecoder().decode(base64);
    }

    private static float[] floats(String base64) {
        ByteBuffer buffer = ByteBuffer.wrap(bytes(base64)).order(ByteOrder.LITTLE_ENDIAN);
        float[] values = new float[buffer.remaining() / Float.BYTES];
        buffer.asFloatBuffer().get(values);
        return values;
    }
}
