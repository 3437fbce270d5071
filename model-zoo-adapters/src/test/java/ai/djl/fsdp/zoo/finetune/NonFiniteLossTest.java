package ai.djl.fsdp.zoo.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.cli.Fsdp;
import ai.djl.fsdp.testing.RankProcesses;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A learning rate that blows the loss up: {@code finetune} on two real rank processes stops at the
 * first non-finite step on both ranks with the same message naming the step, the value and the
 * flags to change, and saves no model.
 */
class NonFiniteLossTest {

    private static final Pattern STOP =
            Pattern.compile("step (\\d+): the loss is \\S+ and the gradient norm (NaN|Infinity)");

    @Test
    void aDivergingRunStopsOnEveryRankAndSavesNothing(@TempDir Path directory) throws Exception {
        Path output = directory.resolve("diverged");
        try (RankProcesses job =
                RankProcesses.builder(Fsdp.class)
                        .worldSize(2)
                        .args(
                                "finetune",
                                "--output_dir",
                                output.toString(),
                                "--max_steps",
                                "8",
                                "--per_device_train_batch_size",
                                "4",
                                "--learning_rate",
                                "1e6",
                                "--max_grad_norm",
                                "0",
                                "--eval_strategy",
                                "no",
                                "--exact_match_samples",
                                "0")
                        .timeout(Duration.ofMinutes(5))
                        .start()) {
            RankProcesses.Results results = job.await();
            assertFalse(results.timedOut(), results.describe());
            String step = null;
            for (RankProcesses.RankResult rank : results.all()) {
                assertEquals(Fsdp.EXIT_FAILURE, rank.exitCode(), results.describe());
                Matcher matcher = STOP.matcher(rank.output());
                assertTrue(matcher.find(), rank.output());
                // The decision rests on an all-reduced norm: every rank stops at the same step.
                if (step == null) {
                    step = matcher.group(1);
                }
                assertEquals(step, matcher.group(1), results.describe());
                for (String fix : new String[] {"--learning_rate", "--max_grad_norm", "no model"}) {
                    assertTrue(rank.output().contains(fix), fix + " in " + rank.output());
                }
            }
            assertFalse(Files.exists(output.resolve("model.safetensors")), "no model is saved");
            // The metrics log, written as the run went, stays to show the divergence.
            List<String> logged = Files.readAllLines(output.resolve("metrics.jsonl"));
            assertTrue(logged.size() < Integer.parseInt(step), logged.toString());
        }
    }
}
