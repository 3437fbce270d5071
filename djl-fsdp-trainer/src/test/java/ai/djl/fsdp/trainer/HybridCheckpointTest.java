package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Sharded checkpoints of HYBRID_SHARD on 4 ranks as 2 shard groups of 2 ({@link ResumeRankMain}):
 * written once (by the first shard group, whose ranks are replicate rank 0: two files, not four),
 * resumed bit for bit on the same layout, and loaded into FULL_SHARD on 4 and on 2 ranks and back
 * into hybrid sharding, each continuing the uninterrupted run's curve on the same global batches.
 */
class HybridCheckpointTest {

    @Test
    void writtenOnceResumedExactlyAndLoadedIntoOtherLayouts(@TempDir Path directory)
            throws Exception {
        Path hybrid = directory.resolve("hybrid");
        List<Map<Long, Double>> uninterrupted =
                run(directory, "hybrid-full", 4, "-", hybrid, "4", "HYBRID_SHARD");
        Path from4 = CheckpointDirectory.of(hybrid, 4);
        try (Stream<Path> files = Files.list(from4)) {
            List<String> rankFiles =
                    files.map(f -> f.getFileName().toString())
                            .filter(n -> n.startsWith("rank-"))
                            .sorted()
                            .toList();
            assertEquals(
                    List.of(
                            CheckpointDirectory.shardFile(0, 2),
                            CheckpointDirectory.shardFile(1, 2)),
                    rankFiles,
                    "one copy of each shard");
        }
        List<Map<Long, Double>> resumed =
                run(directory, "hybrid-resumed", 4, from4.toString(), null, "-", "HYBRID_SHARD");
        for (int rank = 0; rank < 4; rank++) {
            for (long step = 4; step < CheckpointResumeTest.STEPS; step++) {
                assertEquals(
                        uninterrupted.get(rank).get(step),
                        resumed.get(rank).get(step),
                        "rank " + rank + " step " + (step + 1) + ": bit-identical after resume");
            }
        }
        double[] reference = CheckpointResumeTest.mean(uninterrupted);
        Path fullShard = directory.resolve("full-shard");
        CheckpointResumeTest.assertCurve(
                "HYBRID_SHARD 2x2 -> FULL_SHARD on 4 ranks",
                reference,
                CheckpointResumeTest.mean(
                        run(
                                directory,
                                "to-full-4",
                                4,
                                from4.toString(),
                                fullShard,
                                "6",
                                "FULL_SHARD")),
                4);
        CheckpointResumeTest.assertCurve(
                "HYBRID_SHARD 2x2 -> FULL_SHARD on 2 ranks",
                reference,
                CheckpointResumeTest.mean(
                        run(directory, "to-full-2", 2, from4.toString(), null, "-", "FULL_SHARD")),
                4);
        CheckpointResumeTest.assertCurve(
                "FULL_SHARD on 4 ranks -> HYBRID_SHARD_ZERO2 2x2",
                reference,
                CheckpointResumeTest.mean(
                        run(
                                directory,
                                "back-to-hybrid",
                                4,
                                CheckpointDirectory.of(fullShard, 6).toString(),
                                null,
                                "-",
                                "HYBRID_SHARD_ZERO2")),
                6);
    }

    /** AdamW, 2 accumulated micro-batches, a frozen norm, no dropout (the masks follow ranks). */
    private static List<Map<Long, Double>> run(
            Path directory,
            String name,
            int worldSize,
            String resumeFrom,
            Path saveDir,
            String saveAfter,
            String strategy)
            throws Exception {
        return CheckpointResumeTest.run(
                directory,
                name,
                worldSize,
                resumeFrom,
                saveDir,
                saveAfter,
                "sync",
                "0",
                "2",
                "true",
                "0",
                strategy);
    }
}
