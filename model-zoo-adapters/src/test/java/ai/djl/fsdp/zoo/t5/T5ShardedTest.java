package ai.djl.fsdp.zoo.t5;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.fsdp.zoo.ReferenceChecks;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * T5 under FSDP {@code FULL_SHARD}, with T5's default units (each {@link T5Block}, and the untied
 * table, called by both stacks, and head): 2 ranks (real processes on loopback), each training on
 * half of every global batch, end where 1 rank training on the whole batches ends: the same step
 * losses (the global token mean) and the same logits after 3 AdamW steps, within 2e-5 relative, for
 * full fine-tuning and LoRA on T5's default targets, with CPU offload off and on (see {@link
 * T5ShardedChecks}). Training must have moved the logits. On both world sizes, besides: one SGD
 * step under FSDP gives the logits of one plain SGD step on the unsharded model (DJL's autograd)
 * within 2e-5, the gradients through the units and the position bias the first block of each stack
 * shares with the later ones included (a step that left the relative bias alone differs by 1.4e-2);
 * in bfloat16 mixed precision the forward stays within 2e-2 of float32's and the step within 1e-1;
 * and greedy generation with the model sharded, each rank on its own rows, picks the tokens the
 * whole model picks for them.
 */
class T5ShardedTest {

    private static final double TOLERANCE = 2e-5;

    @Test
    void twoRanksEqualOneRank(@TempDir Path dir) throws IOException {
        Path one = Files.createDirectories(dir.resolve("one"));
        Path two = Files.createDirectories(dir.resolve("two"));
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            T5ShardedChecks.runAll(group, one);
        }
        try (RankProcesses job =
                RankProcesses.builder(T5ShardedChecks.class)
                        .worldSize(2)
                        .args(two.toString())
                        .timeout(Duration.ofMinutes(4))
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            assertTrue(results.rank(1).output().contains("checks passed"));
        }
        try (NDManager manager = TestModels.newManager()) {
            for (String scenario : T5ShardedChecks.SCENARIOS) {
                NDList single = read(manager, one, scenario);
                NDList pair = read(manager, two, scenario);
                double losses =
                        ReferenceChecks.relativeDifference(
                                scenario + " losses", pair.get(0), single.get(0), TOLERANCE);
                double logits =
                        ReferenceChecks.relativeDifference(
                                scenario + " logits", pair.get(2), single.get(2), TOLERANCE);
                float moved = TestModels.maxDiff(single.get(1), single.get(2));
                assertTrue(moved > 1e-2, scenario + ": training moved the logits by " + moved);
                System.out.printf(
                        Locale.ROOT,
                        "%s: 2 ranks against 1, losses %.3g, logits %.3g relative; training moved"
                                + " the logits by %.3g%n",
                        scenario,
                        losses,
                        logits,
                        moved);
            }
        }
    }

    private static NDList read(NDManager manager, Path directory, String scenario)
            throws IOException {
        return NDList.decode(manager, Files.readAllBytes(directory.resolve(scenario + ".ndlist")));
    }
}
