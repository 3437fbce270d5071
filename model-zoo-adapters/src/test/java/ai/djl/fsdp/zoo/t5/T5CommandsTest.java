package ai.djl.fsdp.zoo.t5;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.zoo.finetune.data.ByteLevelTokenizer;
import ai.djl.fsdp.zoo.generate.GenerateCommand;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code generate}, which runs decoder-only models, refuses a T5 directory in one line naming the
 * family ({@code finetune} trains T5: {@link Seq2SeqFinetuneTest}).
 */
class T5CommandsTest {

    private static final String EXPECTED =
            "model_type t5 is an encoder-decoder model (T5ForConditionalGeneration)";

    @Test
    void generateRefusesT5ByName(@TempDir Path directory) throws Exception {
        Path model = Files.createDirectories(directory.resolve("t5"));
        Files.writeString(
                model.resolve("config.json"),
                T5Config.of(257, 32, 4, 48, 1, 1, "relu").toJson().toString());
        ByteLevelTokenizer.write(model.resolve("tokenizer.json"));
        assertRefused(new GenerateCommand(), "--model", model.toString(), "--prompt", "hello");
    }

    private static void assertRefused(Callable<?> command, String... args) {
        new CommandLine(command).parseArgs(args);
        IllegalArgumentException error =
                assertThrows(IllegalArgumentException.class, command::call);
        assertTrue(error.getMessage().contains(EXPECTED), error.getMessage());
        assertTrue(error.getMessage().lines().count() == 1, error.getMessage());
    }
}
