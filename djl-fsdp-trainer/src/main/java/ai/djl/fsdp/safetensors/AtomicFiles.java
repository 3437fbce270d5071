package ai.djl.fsdp.safetensors;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Writes files so that readers see either the old file or the complete new one, never a partial
 * write: the content goes to a temporary sibling, is flushed to disk, and is renamed over the
 * target in one step. A crash mid-save leaves the previous checkpoint intact.
 *
 * <p>A committed file has the permissions a plain write would leave: a new file those of any new
 * file ({@code 0666} less the umask, or what the directory's default ACL gives), a replaced one the
 * permissions it had (on a POSIX file system), never a temporary file's {@code 0600}.
 */
public final class AtomicFiles {

    /** Writes a file's content to an open channel. */
    @FunctionalInterface
    public interface Content {

        /**
         * Writes the content.
         *
         * @param channel the channel of the temporary file
         * @throws IOException if writing fails
         */
        void writeTo(FileChannel channel) throws IOException;
    }

    private AtomicFiles() {}

    /**
     * Writes a file atomically.
     *
     * @param target the file to create or replace
     * @param content what to write
     * @throws IOException if writing or renaming fails; the target is then unchanged
     */
    public static void write(Path target, Content content) throws IOException {
        try (Pending pending = open(target)) {
            content.writeTo(pending.channel());
            pending.commit();
        }
    }

    /**
     * Opens a temporary sibling of {@code target} for content written piece by piece (at any
     * position); {@link Pending#commit()} puts it at {@code target}, closing without a commit
     * deletes it.
     *
     * @param target the file to create or replace
     * @return the open temporary file
     * @throws IOException if it cannot be created
     */
    public static Pending open(Path target) throws IOException {
        Path absolute = target.toAbsolutePath();
        Files.createDirectories(absolute.getParent());
        while (true) {
            String unique = Long.toUnsignedString(ThreadLocalRandom.current().nextLong(), 36);
            Path temp = absolute.resolveSibling("." + absolute.getFileName() + unique + ".tmp");
            try {
                // Created as any new file is (no attributes): Files.createTempFile's 0600 would
                // stay with the file through the rename and lock other users out of it.
                FileChannel channel =
                        FileChannel.open(
                                temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
                return new Pending(absolute, temp, channel);
            } catch (FileAlreadyExistsException e) {
                // another writer's temporary name: draw again
            }
        }
    }

    /** A file being written under a temporary name until it is committed. */
    public static final class Pending implements AutoCloseable {

        private final Path target;
        private final Path temp;
        private final FileChannel channel;

        private Pending(Path target, Path temp, FileChannel channel) {
            this.target = target;
            this.temp = temp;
            this.channel = channel;
        }

        /**
         * Returns the channel of the temporary file.
         *
         * @return the channel to write the content to
         */
        public FileChannel channel() {
            return channel;
        }

        /**
         * Flushes the content to disk and renames the temporary file over the target.
         *
         * @throws IOException if flushing or renaming fails; the target is then unchanged
         */
        public void commit() throws IOException {
            channel.force(true);
            channel.close();
            keepPermissions(target, temp);
            try {
                Files.move(
                        temp,
                        target,
                        StandardCopyOption.ATOMIC_MOVE,
                        StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(temp, target, StandardCopyOption.REPLACE_EXISTING);
            }
        }

        /** Deletes the temporary file unless it was committed. */
        @Override
        public void close() throws IOException {
            try {
                channel.close();
            } finally {
                Files.deleteIfExists(temp);
            }
        }
    }

    /** Gives {@code temp} the POSIX permissions of {@code target}, if it exists and has them. */
    private static void keepPermissions(Path target, Path temp) throws IOException {
        Set<PosixFilePermission> permissions;
        try {
            permissions = Files.getPosixFilePermissions(target);
        } catch (NoSuchFileException | UnsupportedOperationException e) {
            return; // a new file, or a file system without POSIX permissions
        }
        Files.setPosixFilePermissions(temp, permissions);
    }

    /**
     * Writes a UTF-8 text file atomically.
     *
     * @param target the file to create or replace
     * @param text the text
     * @throws IOException if writing fails
     */
    public static void writeString(Path target, String text) throws IOException {
        writeBytes(target, text.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Writes a file of {@code bytes} atomically.
     *
     * @param target the file to create or replace
     * @param bytes the content
     * @throws IOException if writing fails
     */
    public static void writeBytes(Path target, byte[] bytes) throws IOException {
        write(target, channel -> writeFully(channel, ByteBuffer.wrap(bytes)));
    }

    /**
     * Writes every remaining byte of a buffer.
     *
     * @param channel the channel
     * @param buffer the bytes
     * @throws IOException if writing fails
     */
    static void writeFully(FileChannel channel, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            channel.write(buffer);
        }
    }
}
