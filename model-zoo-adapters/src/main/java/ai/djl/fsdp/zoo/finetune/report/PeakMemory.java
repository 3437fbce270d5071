package ai.djl.fsdp.zoo.finetune.report;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * This process's resident memory as {@code /proc/self/status} reports it, native memory (libtorch's
 * tensors) included.
 */
public final class PeakMemory {

    private static final Path STATUS = Path.of("/proc/self/status");
    private static final Path CLEAR_REFS = Path.of("/proc/self/clear_refs");

    private PeakMemory() {}

    /** Returns {@code VmHWM} (the peak resident set) in bytes, or -1 where it is not reported. */
    public static long residentBytes() {
        return bytes("VmHWM");
    }

    /**
     * Resets the peak resident set ({@code VmHWM}) to the current one, by writing {@code 5} to
     * {@code /proc/self/clear_refs}, so that the next peak read is that of what runs from now on.
     *
     * @return whether it was reset (false where {@code /proc} does not allow it: the peak is then
     *     still the process's)
     */
    public static boolean resetPeak() {
        try {
            Files.writeString(CLEAR_REFS, "5");
            return true;
        } catch (IOException | SecurityException e) {
            return false;
        }
    }

    /**
     * Returns one {@code kB} line of {@code /proc/self/status} ({@code VmHWM}, {@code RssAnon},
     * {@code RssFile}, ...) in bytes.
     *
     * @param key the line's name, without the colon
     * @return the value in bytes, or -1 where {@code /proc} does not report it
     */
    public static long bytes(String key) {
        if (!Files.isReadable(STATUS)) {
            return -1;
        }
        String prefix = key + ':';
        try {
            for (String line : Files.readAllLines(STATUS)) {
                if (line.startsWith(prefix)) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                }
            }
            return -1;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
