package ai.djl.fsdp.zoo.finetune.report;

import com.google.gson.Gson;
import com.google.gson.JsonObject;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code metrics.jsonl}: one JSON object per logged step ({@code step}, {@code epoch}, {@code
 * loss}, {@code learning_rate}, {@code grad_norm}, {@code tokens_per_s}) or evaluation ({@code
 * eval_loss}, {@code eval_perplexity}), flushed as written so a running job can be followed. A
 * value that is not finite is left out rather than written as NaN.
 */
public final class MetricsLog implements AutoCloseable {

    /** The file name in the output directory. */
    public static final String FILE = "metrics.jsonl";

    private final BufferedWriter writer;
    private final List<JsonObject> rows = new ArrayList<>();
    private final Gson gson = new Gson();

    /**
     * Opens the log.
     *
     * @param file where the rows go
     * @throws IOException if it cannot be created
     */
    public MetricsLog(Path file) throws IOException {
        Files.createDirectories(file.toAbsolutePath().getParent());
        this.writer = Files.newBufferedWriter(file, StandardCharsets.UTF_8);
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
        writer.close();
    }
}
