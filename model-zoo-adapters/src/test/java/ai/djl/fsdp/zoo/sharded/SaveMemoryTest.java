package ai.djl.fsdp.zoo.sharded;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import ai.djl.fsdp.testing.RankProcesses;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Saving a model trained with FSDP, and loading its checkpoint to resume, grows no rank's resident
 * memory by more than 1.5 times its largest unit: the merged model and a sharded checkpoint saved,
 * the checkpoint loaded, on two ranks (see {@link SaveMemoryChecks} and {@link
 * ResumeMemoryChecks}).
 */
class SaveMemoryTest {

    @Test
    void savesHoldOneUnitAtATime() throws Exception {
        runChecks(SaveMemoryChecks.class, "save-memory");
    }

    @Test
    void resumeReadsOnePieceAtATime() throws Exception {
        runChecks(ResumeMemoryChecks.class, "resume-memory");
    }

    /** Runs a class of checks on two ranks, in a directory they share, and prints their output. */
    private static void runChecks(Class<?> checks, String name) throws Exception {
        assumeTrue(Files.exists(Path.of("/proc/self/status")), "reads Linux's /proc/self/status");
        Path directory = Files.createTempDirectory(name);
        // A fixed, pre-touched Java heap: the test measures the tensors' native memory, not the
        // heap's pages (a heap that shrinks after a collection and grows again would count).
        // A fixed mmap threshold: glibc otherwise raises it to the size of the last block freed
        // (up to 32 MB) and keeps this small model's freed multi-megabyte tensors in its heap,
        // which the resident set counts; a 7B model's tensors are above 32 MB and always mapped.
        try (RankProcesses job =
                RankProcesses.builder(checks)
                        .worldSize(2)
                        .args(directory.toString())
                        .jvmOptions("-Xms256m", "-Xmx256m", "-XX:+AlwaysPreTouch")
                        .env("MALLOC_MMAP_THRESHOLD_", "1048576")
                        .env("MKL_DISABLE_FAST_MM", "1")
                        .timeout(Duration.ofMinutes(4))
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            System.out.println(results.rank(0).output());
            System.out.println(results.rank(1).output());
            assertTrue(results.rank(1).output().contains("checks passed"));
        } finally {
            CheckpointDirectory.deleteTree(directory);
        }
    }
}
