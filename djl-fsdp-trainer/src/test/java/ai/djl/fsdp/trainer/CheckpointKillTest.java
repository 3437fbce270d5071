package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import ai.djl.fsdp.testing.RankProcesses;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A 2-rank job that saves a checkpoint after every step into one output directory, keeping the
 * newest {@value #KEEP}, is killed with SIGKILL (both ranks at once) at different moments after its
 * first checkpoint appeared, once while a save is being staged; each time the next job resumes from
 * the newest checkpoint. After every kill each {@code checkpoint-<step>} left is complete and
 * loadable, and a last job resumed from the newest one trains on and rotates its checkpoints.
 */
class CheckpointKillTest {

    private static final int KEEP = 2;

    /** More steps than a job can run before it is killed. */
    private static final int ENDLESS = 100_000;

    @Test
    void killedJobsLeaveOnlyCompleteCheckpointsAndResumeFromTheNewest(@TempDir Path directory)
            throws Exception {
        Path output = directory.resolve("output");
        List<String> staged = new ArrayList<>();
        // When each job is killed: as soon as a save is staged after its first checkpoint (so,
        // mid-save), then at fixed delays after its first checkpoint.
        long[] delaysMillis = {-1, 0, 700};
        long reached = 0;
        for (long delay : delaysMillis) {
            Optional<Path> resume = CheckpointDirectory.newest(output);
            try (RankProcesses job = start(directory, output, resume, ENDLESS)) {
                Path first = awaitNewCheckpoint(job, output, reached);
                if (delay < 0) {
                    awaitStaging(job, output).ifPresent(path -> staged.add(path.toString()));
                } else {
                    Thread.sleep(delay);
                }
                job.kill(0);
                job.kill(1);
                assertTrue(
                        job.await().all().stream().allMatch(rank -> rank.exitCode() != 0),
                        "both ranks were killed after " + first);
            }
            List<Path> left = checkpointNamed(output);
            assertTrue(!left.isEmpty(), "a checkpoint survives the kill");
            for (Path checkpoint : left) {
                assertTrue(
                        CheckpointDirectory.isComplete(checkpoint),
                        checkpoint + " carries a checkpoint name but is incomplete");
                assertLoadable(directory, checkpoint);
            }
            assertTrue(
                    left.size() <= KEEP + 1,
                    "the newest "
                            + KEEP
                            + " are kept (one more if killed before rotating): "
                            + left);
            reached = CheckpointDirectory.step(left.get(left.size() - 1)).orElseThrow();
        }
        assertEquals(1, staged.size(), "the first kill landed while a save was staged");

        Path newest = CheckpointDirectory.newest(output).orElseThrow();
        long from = CheckpointDirectory.step(newest).orElseThrow();
        try (RankProcesses job = start(directory, output, Optional.of(newest), (int) from + 3)) {
            job.await().assertAllSucceeded();
        }
        for (int rank = 0; rank < 2; rank++) {
            List<String> losses =
                    Files.readAllLines(Path.of(directory.resolve("losses") + "-" + rank));
            assertEquals(
                    3, losses.size(), "the resumed job ran steps " + (from + 1) + "-" + (from + 3));
            assertTrue(losses.get(0).startsWith(from + " "), losses.toString());
            for (String line : losses) {
                assertTrue(Double.isFinite(Double.parseDouble(line.split(" ")[1])), line);
            }
        }
        assertEquals(
                List.of(
                        CheckpointDirectory.of(output, from + 2),
                        CheckpointDirectory.of(output, from + 3)),
                CheckpointDirectory.list(output),
                "the job kept its newest " + KEEP + " checkpoints");
        assertEquals(CheckpointDirectory.list(output), checkpointNamed(output));
    }

    /** Starts a 2-rank job that saves after every step, resuming from a checkpoint if given. */
    private static RankProcesses start(
            Path directory, Path output, Optional<Path> resume, int steps) {
        return RankProcesses.builder(ResumeRankMain.class)
                .worldSize(2)
                .args(
                        directory.resolve("losses").toString(),
                        Integer.toString(steps),
                        resume.map(Path::toString).orElse("-"),
                        output.toString(),
                        "every",
                        "sync",
                        "0",
                        "1",
                        "false",
                        Integer.toString(KEEP))
                .timeout(Duration.ofMinutes(2))
                .start();
    }

    /** Waits for a complete checkpoint of a step after {@code after}: this job saved it. */
    private static Path awaitNewCheckpoint(RankProcesses job, Path output, long after) {
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (System.nanoTime() < deadline) {
            Optional<Path> newest = CheckpointDirectory.newest(output);
            if (newest.isPresent()
                    && CheckpointDirectory.step(newest.get()).orElseThrow() > after) {
                return newest.get();
            }
            if (!job.isAlive(0) || !job.isAlive(1)) {
                throw new AssertionError("a rank exited early:\n" + job.await().describe());
            }
            sleep(5);
        }
        throw new AssertionError("no checkpoint appeared in " + output);
    }

    /** Waits until a save is staged (a hidden {@code .checkpoint-<step>.incomplete} exists). */
    private static Optional<Path> awaitStaging(RankProcesses job, Path output) throws IOException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline && job.isAlive(0)) {
            try (Stream<Path> children = Files.list(output)) {
                Optional<Path> staging =
                        children.filter(
                                        path ->
                                                path.getFileName()
                                                        .toString()
                                                        .endsWith(".incomplete"))
                                .findFirst();
                if (staging.isPresent()) {
                    return staging;
                }
            }
        }
        return Optional.empty();
    }

    /** Every directory named {@code checkpoint-<step>}, complete or not, by step. */
    private static List<Path> checkpointNamed(Path output) throws IOException {
        try (Stream<Path> children = Files.list(output)) {
            return children.filter(path -> CheckpointDirectory.step(path).isPresent())
                    .sorted(
                            (a, b) ->
                                    Long.compare(
                                            CheckpointDirectory.step(a).orElseThrow(),
                                            CheckpointDirectory.step(b).orElseThrow()))
                    .toList();
        }
    }

    /** Loads the checkpoint into one rank in this process and trains a step from it. */
    private static void assertLoadable(Path directory, Path checkpoint) throws Exception {
        long step = CheckpointDirectory.step(checkpoint).orElseThrow();
        Path out = directory.resolve("check-" + step);
        ResumeRankMain.run(out, (int) step + 1, checkpoint, null, List.of(), false, 0f, 1, false);
        List<String> losses = Files.readAllLines(Path.of(out + "-0"));
        assertEquals(1, losses.size(), checkpoint + " resumed at its step");
        assertTrue(losses.get(0).startsWith(step + " "), losses.toString());
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }
}
