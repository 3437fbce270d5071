package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import ai.djl.fsdp.testing.RankProcesses;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Sharded checkpoints with real rank processes: a run stopped after a step and resumed by a new job
 * on the same ranks gives bit-identical losses (dropout, a frozen parameter and gradient
 * accumulation included); a checkpoint written by N ranks resumes on M (2 to 1, 1 to 2, 2 to 4, 4
 * to 2) on the same global batches and continues the same curve, within float summation tolerance.
 * Under the GPU kit ({@code DJL_FSDP_TEST_DEVICE=gpu}) every job's ranks are GPU ranks, so 2 to 1
 * and 1 to 2 are the GPU checkpoints of issue #32's step 4.
 */
class CheckpointResumeTest {

    static final int STEPS = 8;

    @Test
    void resumesExactlyOnTheSameRanksAndElasticallyOnOthers(@TempDir Path directory)
            throws Exception {
        Path exact = directory.resolve("exact");
        List<Map<Long, Double>> uninterrupted =
                run(directory, "exact-full", 2, "-", exact, "4", "sync", "0.2", "2", "true");
        List<Map<Long, Double>> resumed =
                run(
                        directory,
                        "exact-resumed",
                        2,
                        CheckpointDirectory.of(exact, 4).toString(),
                        null,
                        "-",
                        "sync",
                        "0.2",
                        "2",
                        "true");
        for (int rank = 0; rank < 2; rank++) {
            for (long step = 4; step < STEPS; step++) {
                assertEquals(
                        uninterrupted.get(rank).get(step),
                        resumed.get(rank).get(step),
                        "rank " + rank + " step " + (step + 1) + ": bit-identical after resume");
            }
            assertEquals(STEPS - 4, resumed.get(rank).size(), "the resumed job ran steps 5-8");
        }

        Path elastic = directory.resolve("elastic");
        double[] reference =
                mean(
                        run(
                                directory,
                                "elastic-full",
                                2,
                                "-",
                                elastic,
                                "4,6",
                                "async",
                                "0",
                                "1",
                                "false"));
        assertTrue(CheckpointDirectory.isComplete(CheckpointDirectory.of(elastic, 6)));
        String from4 = CheckpointDirectory.of(elastic, 4).toString();
        Path oneRank = directory.resolve("one");
        assertCurve(
                "2 -> 1 ranks",
                reference,
                mean(run(directory, "to1", 1, from4, oneRank, "6", "sync", "0", "1", "false")),
                4);
        assertCurve(
                "1 -> 2 ranks",
                reference,
                mean(resumeOnTwo(directory, "back-from-1", CheckpointDirectory.of(oneRank, 6))),
                6);
        Path fourRanks = directory.resolve("four");
        assertCurve(
                "2 -> 4 ranks",
                reference,
                mean(run(directory, "to4", 4, from4, fourRanks, "6", "sync", "0", "1", "false")),
                4);
        assertCurve(
                "4 -> 2 ranks",
                reference,
                mean(resumeOnTwo(directory, "back-to-2", CheckpointDirectory.of(fourRanks, 6))),
                6);
    }

    /** Resumes the elastic run from {@code checkpoint} on 2 ranks, to the end, saving nothing. */
    private static List<Map<Long, Double>> resumeOnTwo(Path directory, String name, Path checkpoint)
            throws Exception {
        return run(directory, name, 2, checkpoint.toString(), null, "-", "sync", "0", "1", "false");
    }

    static void assertCurve(String what, double[] reference, double[] resumed, int from) {
        for (int step = from; step < STEPS; step++) {
            double relative = Math.abs(reference[step] - resumed[step]) / Math.abs(reference[step]);
            assertTrue(
                    relative < 1e-5,
                    what
                            + ": step "
                            + (step + 1)
                            + " loss "
                            + resumed[step]
                            + " against "
                            + reference[step]);
        }
    }

    /** The global batch's loss per step: the mean of the ranks' equal slices' losses. */
    static double[] mean(List<Map<Long, Double>> ranks) {
        double[] mean = new double[STEPS];
        for (Map<Long, Double> losses : ranks) {
            losses.forEach((step, loss) -> mean[step.intValue()] += loss / ranks.size());
        }
        return mean;
    }

    /**
     * Runs {@link ResumeRankMain} on {@code worldSize} ranks and returns each rank's loss by step;
     * {@code more} are its optional arguments (the checkpoints to keep, the strategy).
     */
    static List<Map<Long, Double>> run(
            Path directory,
            String name,
            int worldSize,
            String resumeFrom,
            Path saveDir,
            String saveAfter,
            String mode,
            String dropout,
            String accumulation,
            String freeze,
            String... more)
            throws Exception {
        Path out = directory.resolve(name);
        List<String> args =
                new ArrayList<>(
                        List.of(
                                out.toString(),
                                Integer.toString(STEPS),
                                resumeFrom,
                                saveDir == null ? "-" : saveDir.toString(),
                                saveAfter,
                                mode,
                                dropout,
                                accumulation,
                                freeze));
        args.addAll(List.of(more));
        try (RankProcesses job =
                RankProcesses.builder(ResumeRankMain.class)
                        .worldSize(worldSize)
                        .args(args.toArray(String[]::new))
                        .timeout(Duration.ofMinutes(3))
                        .start()) {
            job.await().assertAllSucceeded();
        }
        List<Map<Long, Double>> ranks = new ArrayList<>();
        for (int rank = 0; rank < worldSize; rank++) {
            Map<Long, Double> losses = new TreeMap<>();
            for (String line : Files.readAllLines(Path.of(out + "-" + rank))) {
                String[] fields = line.split(" ");
                losses.put(Long.parseLong(fields[0]), Double.parseDouble(fields[1]));
            }
            ranks.add(losses);
        }
        return ranks;
    }
}
