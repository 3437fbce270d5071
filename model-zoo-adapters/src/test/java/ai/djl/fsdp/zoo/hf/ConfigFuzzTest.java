package ai.djl.fsdp.zoo.hf;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.zoo.ModelConfig;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import com.code_intelligence.jazzer.junit.FuzzTest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;

/**
 * Fuzzes {@code config.json} parsing and tokenizer loading with Jazzer: any input either loads or
 * is refused with an {@link IllegalArgumentException} naming the file; nothing else is thrown,
 * nothing hangs, runs out of memory or crashes the JVM (the tokenizer is parsed by a native
 * library). The seeds under {@code src/test/resources/.../ConfigFuzzTestInputs} run as regression
 * tests in a plain {@code mvn test}; {@code docs/input-validation.md} gives the command that fuzzes
 * for a set time.
 */
class ConfigFuzzTest {

    private static Path dir;

    @BeforeAll
    static void createDirectory() throws IOException {
        Path shm = Path.of("/dev/shm");
        dir =
                Files.isWritable(shm)
                        ? Files.createTempDirectory(shm, "config-fuzz")
                        : Files.createTempDirectory("config-fuzz");
    }

    @AfterAll
    static void deleteDirectory() throws IOException {
        try (var walk = Files.walk(dir)) {
            for (Path path : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
    }

    @FuzzTest
    @Timeout(10)
    void configJson(byte[] input) throws IOException {
        Path file = dir.resolve(ConfigJson.FILE);
        Files.write(file, input);
        try {
            ModelConfig config = ModelFamilies.read(file);
            assertTrue(config.vocabSize() > 0 && config.numLayers() > 0);
            assertTrue(config.maxPositions() > 0);
            config.eosTokenIds().forEach(id -> assertTrue(id >= 0));
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage().startsWith(file.toString()), e.getMessage());
        }
    }

    @FuzzTest
    @Timeout(10)
    void tokenizerJson(byte[] input) throws IOException {
        Path file = dir.resolve(Tokenizers.FILE);
        Files.write(file, input);
        try (HuggingFaceTokenizer tokenizer = Tokenizers.load(file, "--tokenizer_name")) {
            tokenizer.encode("Hello world");
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage().startsWith(file.toString()), e.getMessage());
            assertTrue(e.getMessage().endsWith("--tokenizer_name"), e.getMessage());
        }
    }
}
