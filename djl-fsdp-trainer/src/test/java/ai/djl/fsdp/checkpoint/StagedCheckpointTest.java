package ai.djl.fsdp.checkpoint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a save finds left by one cut short: a {@code .<name>.previous} beside a complete checkpoint
 * goes, one that is the only copy is moved back, anything else is named and left alone; and a rank
 * whose failure marker cannot be written still reports its own failure.
 */
class StagedCheckpointTest {

    private static final String SHARD = CheckpointDirectory.shardFile(0, 1);

    @TempDir Path dir;

    @Test
    void aStalePreviousBesideACompleteCheckpointGoes() throws IOException {
        Path target = CheckpointDirectory.of(dir, 3);
        save(target, "one");
        Path previous = previous(target);
        Files.createDirectories(previous);
        Files.writeString(previous.resolve(CheckpointDirectory.COMPLETE), "");
        Files.writeString(previous.resolve(SHARD), "older");
        save(target, "two");
        assertEquals("two", state(target));
        assertFalse(Files.exists(previous));

        Files.createDirectories(previous); // a deletion cut short: no marker any more
        Files.writeString(previous.resolve(SHARD), "older");
        save(target, "three");
        assertEquals("three", state(target));
        assertFalse(Files.exists(previous));
    }

    @Test
    void aPreviousThatIsTheOnlyCopyIsMovedBack() throws IOException {
        Path target = CheckpointDirectory.of(dir, 3);
        save(target, "one");
        // Cut short between the two renames: the old checkpoint is out of place, the new not in.
        Files.move(target, previous(target));
        new StagedCheckpoint(target).prepare();
        assertEquals("one", state(target), "moved back before anything else");
        assertFalse(Files.exists(previous(target)));
        save(target, "two");
        assertEquals("two", state(target));
        assertEquals(List.of(target), CheckpointDirectory.list(dir));
    }

    @Test
    void aPreviousThatCannotBeSettledIsNamedAndKept() throws IOException {
        Path target = CheckpointDirectory.of(dir, 3);
        Path previous = previous(target);
        Files.createDirectories(previous);
        Path kept = Files.writeString(previous.resolve("notes.txt"), "mine");
        IOException e =
                assertThrows(IOException.class, () -> new StagedCheckpoint(target).prepare());
        assertTrue(e.getMessage().startsWith(previous + " is left from a save"), e.getMessage());
        assertTrue(e.getMessage().contains(target + " does not exist"), e.getMessage());
        assertEquals("mine", Files.readString(kept));
        assertFalse(Files.exists(target));
    }

    @Test
    void aFailureMarkerThatCannotBeWrittenIsSuppressedOntoTheFailure() {
        // Not prepared: the staging directory does not exist, so no marker can be written there.
        StagedCheckpoint staged = new StagedCheckpoint(CheckpointDirectory.of(dir, 5));
        IOException e =
                assertThrows(
                        IOException.class,
                        () ->
                                staged.writePart(
                                        SHARD,
                                        staging -> {
                                            throw new IOException("No space left on device");
                                        }));
        assertTrue(e.getMessage().endsWith(": No space left on device"), e.getMessage());
        assertEquals(1, e.getSuppressed().length);
        assertTrue(e.getSuppressed()[0] instanceof NoSuchFileException, e.toString());
    }

    /** Saves a one-rank checkpoint whose trainer state is {@code state}. */
    private static void save(Path target, String state) throws IOException {
        StagedCheckpoint staged = new StagedCheckpoint(target);
        staged.prepare();
        staged.writePart(SHARD, staging -> Files.writeString(staging.resolve(SHARD), state));
        staged.complete(new CheckpointMetadata(), state, 1, 0, Duration.ofSeconds(30));
    }

    private static String state(Path checkpoint) throws IOException {
        assertTrue(CheckpointDirectory.isComplete(checkpoint), checkpoint + " is complete");
        return Files.readString(checkpoint.resolve(CheckpointDirectory.TRAINER_STATE));
    }

    private static Path previous(Path target) {
        return target.resolveSibling("." + target.getFileName() + ".previous");
    }
}
