package ai.djl.fsdp.bench.checkpoint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.bench.checkpoint.CheckpointBenchRank.Repetitions;
import ai.djl.fsdp.dist.ProcessGroup;
import java.io.IOException;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How a rank of the checkpoint benchmark ends: its own error first, its files gone. */
class CheckpointBenchRankTest {

    /**
     * A group of which this process is {@code rank}, whose barrier counts its calls and, unless
     * {@code barrierReturns}, fails as a barrier does when another rank never arrives.
     */
    private static ProcessGroup group(int rank, AtomicInteger barriers, boolean barrierReturns) {
        return (ProcessGroup)
                Proxy.newProxyInstance(
                        ProcessGroup.class.getClassLoader(),
                        new Class<?>[] {ProcessGroup.class},
                        (proxy, method, args) ->
                                switch (method.getName()) {
                                    case "getRank" -> rank;
                                    case "barrier" -> {
                                        barriers.incrementAndGet();
                                        if (barrierReturns) {
                                            yield null;
                                        }
                                        throw new IllegalStateException("barrier timed out");
                                    }
                                    default ->
                                            throw new UnsupportedOperationException(
                                                    method.getName());
                                });
    }

    /** What {@code repeatThenDelete} throws on {@code rank} when the repetitions throw. */
    private static Throwable thrown(
            int rank, AtomicInteger barriers, Path directory, Repetitions repetitions) {
        return assertThrows(
                Throwable.class,
                () ->
                        CheckpointBenchRank.repeatThenDelete(
                                group(rank, barriers, false), directory, repetitions));
    }

    private static Path written(Path tmp) throws IOException {
        Path directory = Files.createDirectories(tmp.resolve("bench.checkpoints"));
        Files.writeString(Files.createDirectories(directory.resolve("sync-0")).resolve("a"), "x");
        return directory;
    }

    @Test
    void aFailedRepetitionIsTheErrorAndWaitsForNoOtherRank(@TempDir Path tmp) throws IOException {
        Path directory = written(tmp);
        AtomicInteger barriers = new AtomicInteger();
        IOException failure = new IOException("disk full");
        Throwable thrown =
                thrown(
                        0,
                        barriers,
                        directory,
                        () -> {
                            throw failure;
                        });
        assertSame(failure, thrown);
        assertEquals(0, thrown.getSuppressed().length);
        assertEquals(0, barriers.get(), "no barrier after a failure");
        assertFalse(Files.exists(directory), "rank 0 deletes the checkpoints all the same");

        // Another rank leaves the directory to rank 0.
        Path kept = written(tmp);
        RuntimeException collective = new IllegalStateException("all-gather timed out");
        assertSame(
                collective,
                thrown(
                        1,
                        barriers,
                        kept,
                        () -> {
                            throw collective;
                        }));
        assertEquals(0, barriers.get());
        assertTrue(Files.exists(kept));
    }

    @Test
    void aDeletionThatFailsIsAddedToTheErrorAsSuppressed(@TempDir Path tmp) {
        IOException failure = new IOException("disk full");
        Throwable thrown =
                thrown(
                        0,
                        new AtomicInteger(),
                        tmp.resolve("never-made"),
                        () -> {
                            throw failure;
                        });
        assertSame(failure, thrown);
        assertEquals(1, thrown.getSuppressed().length, "the deletion's failure");
    }

    @Test
    void afterEveryRanksRepetitionsTheBarrierRunsBeforeTheDeletion(@TempDir Path tmp)
            throws IOException {
        Path directory = written(tmp);
        AtomicInteger barriers = new AtomicInteger();
        // The barrier fails here, so the deletion after it must not have run.
        assertThrows(
                IllegalStateException.class,
                () ->
                        CheckpointBenchRank.repeatThenDelete(
                                group(0, barriers, false), directory, () -> {}));
        assertEquals(1, barriers.get());
        assertTrue(Files.exists(directory), "deleted only once every rank is done with it");

        CheckpointBenchRank.repeatThenDelete(group(0, barriers, true), directory, () -> {});
        assertEquals(2, barriers.get());
        assertFalse(Files.exists(directory));
    }
}
