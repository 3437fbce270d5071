package ai.djl.fsdp.safetensors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The permissions of a file {@link AtomicFiles} commits, on a POSIX file system: a new file gets
 * those of a file created plainly in the same directory (the umask's), a replaced file keeps its
 * own; never the temporary file's {@code 0600}.
 */
class AtomicFilesTest {

    @TempDir Path dir;

    @BeforeEach
    void posixOnly() {
        Assumptions.assumeTrue(
                FileSystems.getDefault().supportedFileAttributeViews().contains("posix"),
                "no POSIX permissions on this file system: nothing to check");
    }

    @Test
    void aNewFileHasThePermissionsOfAnyNewFile() throws IOException {
        Set<PosixFilePermission> plain =
                Files.getPosixFilePermissions(Files.createFile(dir.resolve("plain")));
        Path text = dir.resolve("config.json");
        AtomicFiles.writeString(text, "{}");
        assertEquals(plain, Files.getPosixFilePermissions(text));
        Path streamed = dir.resolve("model.safetensors");
        try (AtomicFiles.Pending pending = AtomicFiles.open(streamed)) {
            AtomicFiles.writeFully(pending.channel(), ByteBuffer.wrap(new byte[] {1, 2, 3}));
            pending.commit();
        }
        assertEquals(plain, Files.getPosixFilePermissions(streamed));
        assertTrue(
                plain.contains(PosixFilePermission.OWNER_READ)
                        && plain.contains(PosixFilePermission.OWNER_WRITE),
                "a plain new file is the owner's to read and write: " + plain);
    }

    @Test
    void aReplacedFileKeepsItsPermissions() throws IOException {
        Path text = dir.resolve("config.json");
        Files.writeString(text, "old");
        Set<PosixFilePermission> shared = PosixFilePermissions.fromString("rw-r-----");
        Files.setPosixFilePermissions(text, shared);
        AtomicFiles.writeString(text, "new");
        assertEquals("new", Files.readString(text));
        assertEquals(shared, Files.getPosixFilePermissions(text));
    }
}
