package ai.djl.fsdp.zoo.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import ai.djl.fsdp.zoo.finetune.args.ArgumentChecks;
import ai.djl.fsdp.zoo.finetune.args.FinetuneArguments;
import ai.djl.fsdp.zoo.finetune.report.RunReport;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/**
 * The word-valued flags take Hugging Face's values and refuse others before the run starts, in one
 * line listing what to give: {@code --logging_strategy} (no, steps, epoch) with a positive {@code
 * --logging_steps}, {@code --log_level} (debug, info, warning, error, critical, passive), each
 * level set on the libraries' logging; {@code --add_special_tokens True}, which cannot be honoured,
 * is refused rather than noted.
 */
class FlagValuesTest {

    private static final String LOG_LEVEL = "org.slf4j.simpleLogger.defaultLogLevel";

    @TempDir Path dir;

    @Test
    void unknownValuesAreRefusedWithTheAcceptedOnes() throws Exception {
        String strategy = ": give no, epoch, or steps with a positive --logging_steps";
        assertRefused("--logging_strategy sometimes" + strategy, "--logging_strategy", "sometimes");
        assertRefused(
                "--logging_strategy steps with --logging_steps 0" + strategy,
                "--logging_steps",
                "0");
        assertRefused(
                "--logging_strategy epoch with --logging_steps -3" + strategy,
                "--logging_strategy",
                "epoch",
                "--logging_steps",
                "-3");
        assertRefused(
                "--eval_strategy steps with --eval_steps -1: give no, epoch, or steps with a"
                        + " positive --eval_steps",
                "--eval_strategy",
                "steps",
                "--eval_steps",
                "-1");
        assertRefused(
                "--log_level verbose is not a level: give debug, info, warning, error, critical,"
                        + " passive (Hugging Face's; passive, the default, shows only errors)",
                "--log_level",
                "verbose");
        String special =
                "--add_special_tokens True is not supported: examples are tokenized as written,"
                        + " without the tokenizer's special tokens (a chat template's own tokens"
                        + " mark the turns); pass False or leave the flag out";
        assertRefused(special, "--add_special_tokens", "True");
        assertRefused(special, "--add_special_tokens");
    }

    @Test
    void huggingFacesValuesAreAccepted() {
        for (String strategy : List.of("no", "steps", "epoch")) {
            ArgumentChecks.check(arguments("--logging_strategy", strategy));
        }
        ArgumentChecks.check(arguments("--logging_strategy", "epoch", "--logging_steps", "0"));
        // As Hugging Face: --eval_steps left at 0 takes --logging_steps.
        FinetuneArguments everyLog = arguments("--eval_strategy", "steps", "--logging_steps", "7");
        ArgumentChecks.check(everyLog);
        assertEquals(7, everyLog.evalSteps);
        for (String level : ArgumentChecks.LOG_LEVELS) {
            ArgumentChecks.check(arguments("--log_level", level));
        }
        ArgumentChecks.check(arguments("--add_special_tokens", "False"));
        assertEquals("passive", arguments().logLevel, "Hugging Face's default");
    }

    @Test
    void eachLogLevelSetsTheLibrariesLogging() {
        String before = System.getProperty(LOG_LEVEL);
        try {
            Map<String, String> expected =
                    Map.of(
                            "debug", "debug",
                            "info", "info",
                            "warning", "warn",
                            "error", "error",
                            "critical", "off",
                            "passive", "error");
            assertEquals(ArgumentChecks.LOG_LEVELS.size(), expected.size());
            for (String level : ArgumentChecks.LOG_LEVELS) {
                RunReport.setLogLevel(level);
                assertEquals(expected.get(level), System.getProperty(LOG_LEVEL), level);
            }
        } finally {
            if (before == null) {
                System.clearProperty(LOG_LEVEL);
            } else {
                System.setProperty(LOG_LEVEL, before);
            }
        }
    }

    private static FinetuneArguments arguments(String... flags) {
        FinetuneArguments args = new FinetuneArguments();
        CommandLine line = new CommandLine(CommandSpec.create());
        line.addMixin("args", args);
        List<String> all = new ArrayList<>(List.of("--output_dir", "never"));
        all.addAll(List.of(flags));
        line.parseArgs(all.toArray(new String[0]));
        return args;
    }

    /** Runs finetune with the flags and checks it stops before training with the message. */
    private void assertRefused(String expected, String... flags) throws Exception {
        List<String> args =
                new ArrayList<>(
                        List.of(
                                "--output_dir",
                                dir.resolve("never").toString(),
                                "--max_steps",
                                "1"));
        args.addAll(List.of(flags));
        FinetuneCommand command = new FinetuneCommand();
        new CommandLine(command).parseArgs(args.toArray(new String[0]));
        IllegalArgumentException error =
                assertThrows(IllegalArgumentException.class, command::call);
        assertEquals(expected, error.getMessage());
    }
}
