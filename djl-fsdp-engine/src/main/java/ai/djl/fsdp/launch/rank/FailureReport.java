package ai.djl.fsdp.launch.rank;

import ai.djl.fsdp.dist.CollectiveException;
import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Properties;

/**
 * Why a rank failed, as it tells its launcher: {@code bin/fsdp launch} names a file per rank in
 * {@value #FILE_VARIABLE}, and a rank that fails writes its message there, with the rank it blames
 * when another rank is at fault (a {@link CollectiveException#getFailedRank()}). The launcher then
 * reports the rank that failed first with its own message, not a bystander that only noticed.
 */
public final class FailureReport {

    /** The variable naming the file a failing rank writes. */
    public static final String FILE_VARIABLE = "DJL_FSDP_ERROR_FILE";

    private final String message;
    private final int failedRank;

    private FailureReport(String message, int failedRank) {
        this.message = message;
        this.failedRank = failedRank;
    }

    /**
     * Writes the failure {@code failure} to the file the launcher named, if it named one; a rank
     * started another way writes nothing. Never throws: a report that cannot be written must not
     * hide the failure itself.
     *
     * @param message the one-line message the rank printed
     * @param failure the exception, whose cause chain may name a failed rank
     */
    public static void writeIfRequested(String message, Throwable failure) {
        String file = System.getenv(FILE_VARIABLE);
        if (file == null || file.isBlank()) {
            return;
        }
        int failedRank = CollectiveException.failedRankOf(failure).orElse(-1);
        Properties properties = new Properties();
        properties.setProperty("message", message);
        properties.setProperty("failedRank", Integer.toString(failedRank));
        Path path = Path.of(file);
        Path temporary = path.resolveSibling(path.getFileName() + ".tmp");
        try {
            try (Writer out = Files.newBufferedWriter(temporary, StandardCharsets.UTF_8)) {
                properties.store(out, null);
            }
            Files.move(temporary, path, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException | RuntimeException e) {
            System.err.println("Could not write the failure report " + file + ": " + e);
        }
    }

    /**
     * Reads the report at {@code path}, if the rank wrote one.
     *
     * @param path the rank's report file
     * @return the report, or empty if there is none or it cannot be read
     */
    public static Optional<FailureReport> read(Path path) {
        if (!Files.isRegularFile(path)) {
            return Optional.empty();
        }
        Properties properties = new Properties();
        try (Reader in = Files.newBufferedReader(path, StandardCharsets.UTF_8)) {
            properties.load(in);
            return Optional.of(
                    new FailureReport(
                            properties.getProperty("message", "(no message)"),
                            Integer.parseInt(properties.getProperty("failedRank", "-1"))));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /**
     * Returns the rank's message.
     *
     * @return the message
     */
    public String message() {
        return message;
    }

    /**
     * Returns the rank it blames, if another rank is at fault.
     *
     * @return the blamed rank, or empty
     */
    public OptionalInt failedRank() {
        return failedRank < 0 ? OptionalInt.empty() : OptionalInt.of(failedRank);
    }
}
