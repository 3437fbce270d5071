package ai.djl.fsdp.zoo.finetune;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** This process's peak resident set, native memory (libtorch's tensors) included. */
final class PeakMemory {

    private static final Path STATUS = Path.of("/proc/self/status");

    private PeakMemory() {}

    /** Returns {@code VmHWM} in bytes, or -1 where {@code /proc} does not report it. */
    static long residentBytes() {
        if (!Files.isReadable(STATUS)) {
            return -1;
        }
        try {
            for (String line : Files.readAllLines(STATUS)) {
                if (line.startsWith("VmHWM:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                }
            }
            return -1;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
