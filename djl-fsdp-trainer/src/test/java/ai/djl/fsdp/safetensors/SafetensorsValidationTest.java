package ai.djl.fsdp.safetensors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hostile safetensors headers and indexes: each is refused with one message naming the file, the
 * tensor and what is wrong, never with an overflowed size or the JSON parser's own advice.
 */
class SafetensorsValidationTest {

    @TempDir Path dir;

    /** Writes a safetensors file of the given header and {@code dataBytes} zero bytes of data. */
    static byte[] file(String header, int dataBytes) {
        byte[] json = header.getBytes(StandardCharsets.UTF_8);
        ByteBuffer bytes =
                ByteBuffer.allocate(8 + json.length + dataBytes).order(ByteOrder.LITTLE_ENDIAN);
        bytes.putLong(json.length).put(json);
        return bytes.array();
    }

    private Path write(String name, String header, int dataBytes) throws IOException {
        Path path = dir.resolve(name);
        Files.write(path, file(header, dataBytes));
        return path;
    }

    private String refusal(String header, int dataBytes) throws IOException {
        Path path = write("x.safetensors", header, dataBytes);
        SafetensorsException e =
                assertThrows(SafetensorsException.class, () -> SafetensorsFile.open(path).close());
        assertTrue(
                e.getMessage().startsWith(path + " is not a valid safetensors file: "),
                e.getMessage());
        assertEquals(null, e.getCause(), "the message says it all, once");
        return e.getMessage().substring((path + " is not a valid safetensors file: ").length());
    }

    @Test
    void aShapeWhoseByteSizeOverflowsIsRefused() throws IOException {
        // 2^62 * 4 elements of 4 bytes wraps to 0 in a long; an empty data range must not match it.
        String message =
                refusal(
                        "{\"w\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],"
                                + "\"data_offsets\":[0,0]}}",
                        0);
        assertTrue(
                message.startsWith(
                        "tensor \"w\": shape [4611686018427387904, 4] of F32 overflows 2^63 bytes"),
                message);
    }

    @Test
    void reversedAndOverlappingOffsetsAreNamed() throws IOException {
        assertTrue(
                refusal("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", 8)
                        .startsWith("tensor \"w\": its data_offsets [8, 4] are reversed"));
        assertEquals(
                "tensors \"a\" [0, 8) and \"b\" [4, 12) overlap in the data section",
                refusal(
                        "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                            + "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                        12));
        // Empty tensors at the same offset share no byte.
        Path ok =
                write(
                        "ok.safetensors",
                        "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]},"
                                + "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                        4);
        SafetensorsFile.open(ok).close();
    }

    @Test
    void corruptJsonIsDescribedWithoutTheParsersAdvice() throws IOException {
        String message = refusal("{\"w\": {}} trailing", 0);
        assertEquals("its header is not valid JSON: malformed JSON at line 1 column 12", message);
        assertEquals(
                "its header is not valid JSON: the text ends early (truncated?) at line 1 column"
                        + " 8",
                refusal("{\"w\": {", 0));
        assertFalse(refusal("{w: 1}", 0).contains("setStrictness"));
    }

    @Test
    void malformedEntriesNameTheKeyAndTheFormat() throws IOException {
        assertEquals(
                "tensor \"w\": \"shape\" holds \"2\", not an integer in [0, 2^63) (expected"
                        + " {\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [begin,"
                        + " end]})",
                refusal("{\"w\":{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}}", 8));
        assertTrue(
                refusal("{\"w\":{\"dtype\":\"F32\",\"shape\":[1e30],\"data_offsets\":[0,4]}}", 4)
                        .startsWith("tensor \"w\": \"shape\" holds 1e30, not an integer"));
        assertTrue(
                refusal("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4)
                        .startsWith("tensor \"w\": \"data_offsets\" has 1 values, not 2"));
        assertTrue(refusal("{\"w\":[1]}", 4).startsWith("tensor \"w\": it is not an object"));
        assertEquals(
                "__metadata__ value of \"format\" is not a string",
                refusal("{\"__metadata__\":{\"format\":{}}}", 0));
    }

    @Test
    void indexShardNamesMustStayInsideTheCheckpoint() throws IOException {
        Path outside = dir.resolve("outside.safetensors");
        Files.write(
                outside,
                file("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4));
        Path checkpoint = dir.resolve("ckpt");
        Files.createDirectories(checkpoint);
        Path index = checkpoint.resolve(SafetensorsCheckpoint.INDEX_FILE);
        for (String name : new String[] {"../outside.safetensors", outside.toString(), "", "."}) {
            Files.writeString(
                    index, "{\"weight_map\": {\"w\": \"" + name.replace("\\", "\\\\") + "\"}}");
            SafetensorsException e =
                    assertThrows(
                            SafetensorsException.class,
                            () -> SafetensorsCheckpoint.open(checkpoint).close());
            assertTrue(
                    e.getMessage()
                            .startsWith(
                                    index
                                            + " places \"w\" in \""
                                            + name
                                            + "\", which is not a file inside "
                                            + checkpoint),
                    e.getMessage());
        }
        Files.writeString(index, "{\"weight_map\": {\"w\": [\"a\"]}}");
        SafetensorsException e =
                assertThrows(
                        SafetensorsException.class,
                        () -> SafetensorsCheckpoint.open(checkpoint).close());
        assertTrue(e.getMessage().contains("maps \"w\" to [\"a\"], not a shard file name"));
        Files.writeString(index, "{\"weight_map\": ");
        e =
                assertThrows(
                        SafetensorsException.class,
                        () -> SafetensorsCheckpoint.open(checkpoint).close());
        assertTrue(
                e.getMessage()
                        .startsWith(index + " is not valid JSON: the text ends early (truncated?)"),
                e.getMessage());
    }
}
