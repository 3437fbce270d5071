package ai.djl.fsdp.zoo.t5;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.zoo.finetune.FinetuneCommand;
import ai.djl.fsdp.zoo.finetune.data.ByteLevelTokenizer;
import ai.djl.fsdp.zoo.generate.GenerateCommand;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The commands that run decoder-only models refuse a T5 directory in one line naming the family,
 * before anything is written: {@code finetune} and {@code generate} take causal language models.
 */
class T5CommandsTest {

    private static final String EXPECTED =
            "model_type t5 is an encoder-decoder model (T5ForConditionalGeneration)";

    @Test
    void finetuneAndGenerateRefuseT5ByName(@TempDir Path directory) throws Exception {
        Path model = Files.createDirectories(directory.resolve("t5"));
        Files.writeString(
                model.resolve("config.json"),
                T5Config.of(257, 32, 4, 48, 1, 1, "relu").toJson().toString());
        ByteLevelTokenizer.write(model.resolve("tokenizer.json"));
        Path output = directory.resolve("out");
        assertRefused(
                new FinetuneCommand(),
                "--model_name_or_path",
                model.toString(),
                "--tokenizer_name",
                "byte-level",
                "--output_dir",
                output.toString(),
                "--max_steps",
                "1");
        assertFalse(Files.exists(output), "nothing is written");
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
