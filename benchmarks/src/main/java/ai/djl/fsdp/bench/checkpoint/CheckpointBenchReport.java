package ai.djl.fsdp.bench.checkpoint;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Reads the ranks' measurement files ({@code name value} lines) and writes one line per figure: the
 * largest value over the ranks (the slowest rank's time, the largest rank's memory), but for {@code
 * peak_rss_reset}, the smallest: 1 only when every rank could reset its peak.
 */
final class CheckpointBenchReport {

    /** The figure that holds only when it holds on every rank: 1 if the peak RSS was reset. */
    static final String PEAK_RESET = "peak_rss_reset";

    private CheckpointBenchReport() {}

    static String summarize(int nproc, Path report) throws IOException {
        Map<String, Double> figures = new LinkedHashMap<>();
        for (int rank = 0; rank < nproc; rank++) {
            for (String line :
                    Files.readAllLines(Path.of(report + ".rank" + rank), StandardCharsets.UTF_8)) {
                String[] pair = line.trim().split(" ");
                figures.merge(
                        pair[0],
                        Double.parseDouble(pair[1]),
                        pair[0].equals(PEAK_RESET) ? Math::min : Math::max);
            }
        }
        return figures.entrySet().stream()
                .map(e -> String.format(Locale.ROOT, "%s=%.3f", e.getKey(), e.getValue()))
                .collect(Collectors.joining(System.lineSeparator()));
    }
}
