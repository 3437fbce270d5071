package ai.djl.fsdp.zoo.finetune.listener;

import ai.djl.fsdp.zoo.finetune.report.MetricsLog;
import com.google.gson.JsonObject;
import java.util.function.Consumer;

/**
 * Where the recipe's listeners report: rank 0's lines, and the rows of {@code metrics.jsonl}. The
 * listeners are given to the trainer when it is built; the metrics log opens later, once the run
 * knows the step it resumes after ({@link #open}).
 */
public final class RunLog {

    private final Consumer<String> print;
    private MetricsLog metrics;

    /**
     * Creates the log.
     *
     * @param print prints a line on rank 0 (nothing on the others)
     */
    public RunLog(Consumer<String> print) {
        this.print = print;
    }

    /**
     * Sends the rows from now on to {@code metrics}.
     *
     * @param metrics the run's metrics log (one that writes nothing on ranks other than 0)
     */
    public void open(MetricsLog metrics) {
        this.metrics = metrics;
    }

    void print(String line) {
        print.accept(line);
    }

    void write(JsonObject row) {
        if (metrics == null) {
            throw new IllegalStateException("The run's metrics log is not open yet");
        }
        metrics.write(row);
    }
}
