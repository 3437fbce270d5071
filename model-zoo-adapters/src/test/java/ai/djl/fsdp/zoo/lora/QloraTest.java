package ai.djl.fsdp.zoo.lora;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.testing.RankProcesses;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A LoRA step on a 4-bit base under FSDP equals the step on a float base holding the dequantized
 * weights ({@link QloraChecks}), on one rank and on two, and under hybrid sharding the step under
 * FULL_SHARD ({@link QloraHybridChecks}, 2 "nodes" of 2 ranks); a 4-bit base started sharded from a
 * float checkpoint holds what quantizing the whole model gives ({@link QloraStartChecks}); its
 * merged output is a float checkpoint that computes what the 4-bit model with its adapters computes
 * ({@link QloraMergeChecks}).
 */
class QloraTest {

    @Test
    void oneRank() {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            QloraChecks.run(group);
        }
    }

    @Test
    void startsShardedFromAFloatAndAPrequantizedCheckpoint(@TempDir Path directory)
            throws IOException {
        QloraStartChecks.write(directory);
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            QloraStartChecks.run(group, directory);
        }
        onTwoRanks(QloraStartChecks.class, directory.toString());
    }

    @Test
    void mergedOutputOnOneAndTwoRanks(@TempDir Path directory) throws IOException {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            QloraMergeChecks.run(group, directory);
        }
        onTwoRanks(QloraMergeChecks.class, directory.toString());
    }

    @Test
    void twoRanks() {
        onTwoRanks(QloraChecks.class);
    }

    @Test
    void hybridShardOnTwoNodesOfTwoRanks() {
        try (RankProcesses job =
                RankProcesses.builder(QloraHybridChecks.class)
                        .worldSize(2 * QloraHybridChecks.SHARD_GROUP)
                        .timeout(Duration.ofMinutes(6))
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            for (RankProcesses.RankResult rank : results.all()) {
                assertTrue(rank.output().contains("checks passed"), results.describe());
            }
            results.rank(0)
                    .output()
                    .lines()
                    .filter(line -> line.contains(" against "))
                    .forEach(System.out::println);
        }
    }

    private static void onTwoRanks(Class<?> checks, String... args) {
        try (RankProcesses job =
                RankProcesses.builder(checks)
                        .worldSize(2)
                        .args(args)
                        .timeout(Duration.ofMinutes(6))
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            assertTrue(results.rank(1).output().contains("checks passed"));
        }
    }
}
