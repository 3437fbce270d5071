package ai.djl.fsdp.zoo.finetune.report;

import ai.djl.fsdp.safetensors.AtomicFiles;
import com.google.gson.Gson;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code metrics.jsonl}: one JSON object per logged step ({@code step}, {@code epoch}, {@code
 * loss}, {@code learning_rate}, {@code grad_norm}, {@code tokens_per_s}) or evaluation ({@code
 * eval_loss}, {@code eval_perplexity}), flushed as written so a running job can be followed with
 * {@code tail -f}. A resumed run starts from the rows of the run it resumes, up to its step. A
 * value that is not finite is left out rather than written as NaN.
 */
public final class MetricsLog implements AutoCloseable {

    /** The file name in the output directory. */
    public static final String FILE = "metrics.jsonl";

    private final BufferedWriter writer;
    private final List<JsonObject> rows = new ArrayList<>();
    private final Gson gson = new Gson();

    private MetricsLog(BufferedWriter writer) {
        this.writer = writer;
    }

    /**
     * Opens the log at {@code file}, replacing what was there; a resumed run first gets the rows of
     * {@code earlier} (the log of the run that saved the checkpoint) up to the step it resumes
     * after, written to a temporary name first.
     *
     * @param file where the rows go
     * @param earlier the earlier run's log, or null (also when it does not exist)
     * @param resumedStep the step the run resumes after (0 for a new run: no earlier rows)
     * @return the log
     * @throws IOException if the file cannot be written or the earlier log cannot be read
     */
    public static MetricsLog open(Path file, Path earlier, long resumedStep) throws IOException {
        Files.createDirectories(file.toAbsolutePath().getParent());
        List<JsonObject> kept = new ArrayList<>();
        StringBuilder text = new StringBuilder();
        if (resumedStep > 0 && earlier != null && Files.isRegularFile(earlier)) {
            for (String line : Files.readAllLines(earlier, StandardCharsets.UTF_8)) {
                JsonObject row = parse(line);
                if (row != null && row.get("step").getAsLong() <= resumedStep) {
                    kept.add(row);
                    text.append(line).append(System.lineSeparator());
                }
            }
        }
        AtomicFiles.writeString(file, text.toString());
        MetricsLog log =
                new MetricsLog(
                        Files.newBufferedWriter(
                                file, StandardCharsets.UTF_8, StandardOpenOption.APPEND));
        log.rows.addAll(kept);
        return log;
    }

    /**
     * Returns a log that keeps no file (the ranks other than 0).
     *
     * @return the log
     */
    public static MetricsLog none() {
        return new MetricsLog(null);
    }

    /** A row of an earlier log, or null for a line that is not one (a line cut by a crash). */
    private static JsonObject parse(String line) {
        try {
            JsonElement element = JsonParser.parseString(line);
            if (element.isJsonObject() && element.getAsJsonObject().has("step")) {
                return element.getAsJsonObject();
            }
        } catch (JsonParseException e) {
            // a partial last line: left out
        }
        return null;
    }

    /**
     * Starts a row.
     *
     * @param step the optimizer step
     * @param epoch the fractional epoch
     * @return the row, to fill and {@link #write}
     */
    public static JsonObject row(int step, double epoch) {
        JsonObject row = new JsonObject();
        row.addProperty("step", step);
        row.addProperty("epoch", Math.round(epoch * 1e4) / 1e4);
        return row;
    }

    /**
     * Adds a value to a row if it is finite.
     *
     * @param row the row
     * @param key the key
     * @param value the value
     */
    public static void put(JsonObject row, String key, double value) {
        if (Double.isFinite(value)) {
            row.addProperty(key, value);
        }
    }

    /**
     * Appends a row.
     *
     * @param row the row
     */
    public void write(JsonObject row) {
        rows.add(row);
        if (writer == null) {
            return;
        }
        try {
            writer.write(gson.toJson(row));
            writer.newLine();
            writer.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Returns the rows written so far. */
    public List<JsonObject> getRows() {
        return rows;
    }

    @Override
    public void close() throws IOException {
        if (writer != null) {
            writer.close();
        }
    }
}
