package ai.djl.fsdp.safetensors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;

/**
 * Fuzzes the safetensors reader and its index with Jazzer: any input either opens, with every
 * tensor's bytes inside the file, or is refused with a {@link SafetensorsException} that names the
 * file; nothing else is thrown, nothing hangs, nothing runs out of memory. In a plain {@code mvn
 * test} the seeds under {@code src/test/resources/.../SafetensorsFuzzTestInputs} run as regression
 * tests; {@code docs/input-validation.md} gives the command that fuzzes for a set time.
 */
class SafetensorsFuzzTest {

    private static Path dir;

    @BeforeAll
    static void createDirectory() throws IOException {
        Path shm = Path.of("/dev/shm");
        dir =
                Files.isWritable(shm)
                        ? Files.createTempDirectory(shm, "safetensors-fuzz")
                        : Files.createTempDirectory("safetensors-fuzz");
        // A valid shard beside the index, and a file outside the checkpoint directory.
        Files.createDirectories(dir.resolve("ckpt"));
        byte[] shard =
                SafetensorsValidationTest.file(
                        "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8);
        Files.write(dir.resolve("ckpt/model-00001-of-00001.safetensors"), shard);
        Files.write(dir.resolve("outside.safetensors"), shard);
    }

    @AfterAll
    static void deleteDirectory() throws IOException {
        try (var walk = Files.walk(dir)) {
            for (Path path : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
    }

    /**
     * The input is a file: the first byte chooses how the rest is read. 0: the rest is the whole
     * file, as is. Otherwise two bytes give the data section's size and the rest is the header's
     * JSON, behind a correct length prefix, so that mutations reach the header's checks.
     */
    @FuzzTest
    @Timeout(10)
    void safetensorsFile(byte[] input) throws IOException {
        Path file = dir.resolve("fuzz.safetensors");
        Files.write(file, asFile(input));
        try (SafetensorsFile st = SafetensorsFile.open(file)) {
            for (String name : st.getNames()) {
                TensorInfo info = st.info(name);
                assertTrue(info.begin() <= info.end());
                long elements = info.elements();
                ByteBuffer bytes = st.map(name, 0, Math.min(elements, 1024));
                assertEquals(Math.min(elements, 1024) * info.dtype().bytes(), bytes.remaining());
                assertTrue(8 + info.end() <= Files.size(file));
            }
        } catch (SafetensorsException e) {
            assertTrue(e.getMessage().startsWith(file.toString()), e.getMessage());
        }
    }

    /** The input is a {@code model.safetensors.index.json} beside one valid shard. */
    @FuzzTest
    @Timeout(10)
    void checkpointIndex(byte[] input) throws IOException {
        Path index = dir.resolve("ckpt").resolve(SafetensorsCheckpoint.INDEX_FILE);
        Files.write(index, input);
        try (SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint.open(index.getParent())) {
            for (String name : checkpoint.names()) {
                assertEquals("w", name, "only the shard's tensor can be found");
                checkpoint.map(name, 0, 2);
            }
        } catch (SafetensorsException e) {
            assertTrue(e.getMessage().contains(dir.toString()), e.getMessage());
        } catch (java.nio.file.NoSuchFileException e) {
            // An index naming a shard inside the directory that does not exist: IOException.
            assertTrue(e.getFile().startsWith(index.getParent().toString()), e.getFile());
        }
    }

    static byte[] asFile(byte[] input) {
        if (input.length < 3 || input[0] == 0) {
            return input.length == 0 ? input : Arrays.copyOfRange(input, 1, input.length);
        }
        int dataBytes = ((input[1] & 0xFF) << 8) | (input[2] & 0xFF);
        String header = new String(input, 3, input.length - 3, StandardCharsets.UTF_8);
        return SafetensorsValidationTest.file(header, dataBytes);
    }
}
