package ai.djl.fsdp.launch;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.Charset;

/**
 * Copies a rank's output stream line by line to the launcher's stream, each line prefixed with the
 * rank, on a daemon thread. Lines from different ranks never interleave within a line because
 * {@link PrintStream#println(String)} holds the stream's lock for the whole line.
 */
final class LinePrefixer {

    private final Thread thread;

    private LinePrefixer(Thread thread) {
        this.thread = thread;
    }

    /**
     * Starts copying {@code source} to {@code target} until the source ends.
     *
     * @param source the rank's stdout or stderr
     * @param prefix the text before each line, such as {@code "[rank1] "}
     * @param target the launcher's stream
     * @return the running copy
     */
    static LinePrefixer start(InputStream source, String prefix, PrintStream target) {
        Thread thread =
                new Thread(() -> copy(source, prefix, target), "fsdp-launch-output-" + prefix);
        thread.setDaemon(true);
        thread.start();
        return new LinePrefixer(thread);
    }

    /**
     * Waits until the source has ended and every line has been written.
     *
     * @param timeoutMillis how long to wait at most (a grandchild may hold the pipe open)
     * @throws InterruptedException if interrupted while waiting
     */
    void join(long timeoutMillis) throws InterruptedException {
        thread.join(timeoutMillis);
    }

    private static void copy(InputStream source, String prefix, PrintStream target) {
        try (BufferedReader reader =
                new BufferedReader(new InputStreamReader(source, Charset.defaultCharset()))) {
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                target.println(prefix + line);
            }
        } catch (IOException e) {
            target.println(prefix + "(the rest of this rank's output was lost: " + e + ")");
        }
    }
}
