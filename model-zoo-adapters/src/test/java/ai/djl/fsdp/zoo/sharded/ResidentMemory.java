package ai.djl.fsdp.zoo.sharded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/**
 * This process's resident set, from {@code /proc/self/statm} (Linux), read without allocating on
 * the Java heap (a sampler that made garbage every millisecond would grow the resident set itself).
 */
final class ResidentMemory implements AutoCloseable {

    private static final Path STATM = Path.of("/proc/self/statm");
    private static final long PAGE = 4096;

    private final FileChannel channel;
    private final ByteBuffer buffer = ByteBuffer.allocate(256);

    private ResidentMemory() throws IOException {
        channel = FileChannel.open(STATM);
    }

    /** Returns the resident set now, in bytes (one reading, then closed). */
    static long current() {
        try (ResidentMemory memory = new ResidentMemory()) {
            return memory.read();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Reads the second field of statm, the resident pages. */
    private long read() throws IOException {
        buffer.clear();
        channel.position(0);
        while (channel.read(buffer) > 0) {
            // reads the whole line
        }
        int i = 0;
        while (buffer.get(i) != ' ') {
            i++;
        }
        long pages = 0;
        for (i++; i < buffer.position() && buffer.get(i) != ' '; i++) {
            pages = pages * 10 + (buffer.get(i) - '0');
        }
        return pages * PAGE;
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }

    /** Starts a thread that samples the resident set every millisecond, keeping the largest. */
    static Peak watch() throws IOException {
        Peak peak = new Peak(new ResidentMemory());
        peak.thread.setDaemon(true);
        peak.thread.start();
        return peak;
    }

    /** The largest resident set seen while watching. */
    static final class Peak {

        private final ResidentMemory memory;
        private final Thread thread = new Thread(this::sample, "resident-memory");
        private volatile boolean stopped;
        private volatile long largest;

        private Peak(ResidentMemory memory) {
            this.memory = memory;
        }

        private void sample() {
            try (memory) {
                while (!stopped) {
                    largest = Math.max(largest, memory.read());
                    Thread.sleep(1);
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        /** Stops watching (after one last sample). */
        void stop() throws InterruptedException {
            stopped = true;
            thread.join();
            largest = Math.max(largest, current());
        }

        /** Returns the largest resident set seen, in bytes. */
        long get() {
            return largest;
        }
    }
}
