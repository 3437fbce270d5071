package ai.djl.fsdp.zoo.finetune.report;

import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.metrics.SentBytes;
import ai.djl.fsdp.zoo.PretrainedModel;
import ai.djl.fsdp.zoo.finetune.output.OutputDirectory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Parameter;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;

/**
 * What a run tells the user: the plan at the start, exact-match results, and at the end the summary
 * (final and best eval loss, perplexity, accuracy, tokens per second, peak memory per rank, the
 * bytes the busiest rank sent in the last step by kind of collective, where the model went) as text
 * and as {@code summary.json}. The run's files ({@code metrics.jsonl}, {@code training_curves.png},
 * {@code summary.json}) are written in a scratch directory and land in the output directory with
 * the model, which replaces it as a whole; the metrics log is written in the output directory as
 * the run goes only where that changes nothing the directory holds yet.
 */
public final class RunReport implements AutoCloseable {

    /** The summary's file name in the output directory. */
    public static final String SUMMARY = "summary.json";

    private final boolean rankZero;
    private final Path outputDir;
    private final Path scratch;
    private final Path metricsFile;

    /**
     * Prepares the run's report.
     *
     * @param rankZero whether this is rank 0, the one that writes
     * @param outputDir the run's {@code --output_dir}
     * @param overwrite its {@code --overwrite_output_dir}
     * @param resumeFrom the checkpoint the run resumes from, or null
     * @throws IOException if the scratch directory cannot be made
     */
    public RunReport(boolean rankZero, Path outputDir, boolean overwrite, Path resumeFrom)
            throws IOException {
        this.rankZero = rankZero;
        this.outputDir = outputDir;
        this.scratch = Files.createTempDirectory("finetune-run");
        Path live = null;
        if (rankZero) {
            OutputDirectory output = OutputDirectory.check(outputDir, overwrite);
            Path parent = resumeFrom == null ? null : resumeFrom.toAbsolutePath().getParent();
            boolean resuming =
                    parent != null
                            && Files.exists(output.target())
                            && Files.isSameFile(parent, output.target());
            live = output.liveEntry(MetricsLog.FILE, resuming);
        }
        this.metricsFile = live != null ? live : scratch.resolve(MetricsLog.FILE);
    }

    /**
     * Sets the level of the libraries' logging (DJL's and this project's, through slf4j-simple) in
     * this process from {@code --log_level} (rank 0's; the other ranks pass {@code passive}), in
     * Hugging Face's words: {@code debug}, {@code info} (DJL's start-up logging: engine, CUDA
     * detection), {@code warning}, {@code error}, {@code critical} (nothing: neither logs at that
     * level) and {@code passive}, the default, which shows only errors (Hugging Face's leaves its
     * library at warnings); an unknown value, refused by the flags' checks, does as {@code
     * passive}. The run's own lines (steps, notes, the summary) are printed at every level.
     *
     * @param logLevel the flag's value
     */
    public static void setLogLevel(String logLevel) {
        String level =
                switch (logLevel) {
                    case "debug", "info" -> logLevel;
                    case "warning" -> "warn";
                    case "critical" -> "off";
                    default -> "error";
                };
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", level);
    }

    /**
     * Opens the run's metrics log on rank 0: in the output directory as the run goes where that
     * changes nothing there yet (see {@link OutputDirectory#liveEntry}), else in the scratch
     * directory. A resumed run keeps the rows of the run that saved its checkpoint up to its step.
     *
     * @param resumedFrom the checkpoint the run resumed from, or null
     * @param resumedStep the step it resumed after
     * @return the log, one that writes nothing on the other ranks
     * @throws IOException if the log cannot be opened
     */
    public MetricsLog openMetrics(Path resumedFrom, long resumedStep) throws IOException {
        if (!rankZero) {
            return MetricsLog.none();
        }
        Path earlier = resumedFrom == null ? null : resumedFrom.toAbsolutePath().getParent();
        return MetricsLog.open(
                metricsFile,
                earlier == null ? null : earlier.resolve(MetricsLog.FILE),
                resumedStep);
    }

    /** Returns the file the training curves are drawn into, copied to the output at the end. */
    public Path plotFile() {
        return scratch.resolve(CurvePlot.FILE);
    }

    /** Returns where the metrics log is written as the run goes. */
    public Path getMetricsFile() {
        return metricsFile;
    }

    /**
     * Counts the model's parameter elements from their shapes, each shared parameter once: once the
     * model is sharded, a parameter's own array is an empty placeholder.
     *
     * @param lm the model
     * @return its parameter elements
     */
    public static long countParameters(PretrainedModel lm) {
        Map<String, Long> sizes = new HashMap<>();
        for (Parameter parameter : lm.getParameters().values()) {
            sizes.put(parameter.getId(), parameter.getShape().size());
        }
        return sizes.values().stream().mapToLong(Long::longValue).sum();
    }

    /**
     * Describes an exact-match evaluation in one line.
     *
     * @param match its result
     * @param when when it ran ({@code before training}, {@code after training})
     * @return the line
     */
    public static String describe(ExactMatch match, String when) {
        return String.format(
                Locale.ROOT,
                "exact_match %s: %d/%d = %.1f%% in %.1f s | sample: %s -> %s",
                when,
                match.correct(),
                match.total(),
                100 * match.accuracy(),
                match.seconds(),
                match.question(),
                match.reply().isEmpty() ? "(empty reply)" : match.reply());
    }

    /**
     * Returns each rank's peak resident memory in bytes (a collective: every rank calls it).
     *
     * @param trainer the trainer, whose manager holds the exchange
     * @param group the ranks
     * @return the peaks, by rank
     */
    public static long[] peakMemoryPerRank(FsdpTrainer trainer, ProcessGroup group) {
        long[][] peaks = perRank(trainer, group, PeakMemory.residentBytes());
        long[] bytes = new long[peaks.length];
        for (int rank = 0; rank < bytes.length; rank++) {
            bytes[rank] = peaks[rank][0];
        }
        return bytes;
    }

    /**
     * Returns the bytes the busiest rank sent in the last optimizer step, by kind: the largest of
     * each over the ranks, as {@code bench train} reports them (a collective: every rank calls it).
     *
     * @param trainer the trainer, whose figures and manager are used
     * @param group the ranks
     * @return the bytes by kind
     */
    public static SentBytes sentPerStep(FsdpTrainer trainer, ProcessGroup group) {
        long[][] sent =
                perRank(trainer, group, trainer.getShardingStats().sentByKindLastStep().toArray());
        SentBytes most = SentBytes.NONE;
        for (long[] rank : sent) {
            most = most.max(SentBytes.of(rank));
        }
        return most;
    }

    /** Every rank's {@code mine}, by rank: a sum of arrays each rank fills its own row of. */
    private static long[][] perRank(FsdpTrainer trainer, ProcessGroup group, long... mine) {
        int ranks = group.getSize();
        try (NDManager manager = trainer.getManager().newSubManager()) {
            long[] rows = new long[ranks * mine.length];
            System.arraycopy(mine, 0, rows, group.getRank() * mine.length, mine.length);
            NDArray all = manager.create(rows);
            group.allReduce(all, ReduceOp.SUM);
            long[] summed = all.toLongArray();
            long[][] byRank = new long[ranks][];
            for (int rank = 0; rank < ranks; rank++) {
                byRank[rank] =
                        Arrays.copyOfRange(summed, rank * mine.length, (rank + 1) * mine.length);
            }
            return byRank;
        }
    }

    /**
     * Writes {@code summary.json} and returns the summary's text.
     *
     * @param outcome the run's figures
     * @param before the exact match before training, or null
     * @param after the exact match after training, or null
     * @param peaks each rank's peak resident memory in bytes
     * @param sent the bytes the busiest rank sent in the last step, by kind
     * @return the text
     * @throws IOException if the file cannot be written
     */
    public String summary(
            Outcome outcome, ExactMatch before, ExactMatch after, long[] peaks, SentBytes sent)
            throws IOException {
        JsonObject json = new JsonObject();
        json.addProperty("steps", outcome.getSteps());
        MetricsLog.put(json, "final_loss", outcome.getLastLoss());
        MetricsLog.put(json, "first_eval_loss", outcome.getFirstEvalLoss());
        MetricsLog.put(json, "final_eval_loss", outcome.getLastEvalLoss());
        MetricsLog.put(json, "best_eval_loss", outcome.getBestEvalLoss());
        MetricsLog.put(json, "final_eval_perplexity", Math.exp(outcome.getLastEvalLoss()));
        MetricsLog.put(json, "tokens_per_s", outcome.getTokensPerSecond());
        if (before != null) {
            json.addProperty("exact_match_before", before.accuracy());
            json.addProperty("exact_match_after", after.accuracy());
            json.addProperty("exact_match_samples", after.total());
        }
        JsonArray memory = new JsonArray();
        for (long peak : peaks) {
            memory.add(peak);
        }
        json.add("peak_rss_bytes_per_rank", memory);
        long[] bytes = sent.toArray();
        for (int kind = 0; kind < bytes.length; kind++) {
            json.addProperty("sent_" + SentBytes.KINDS.get(kind) + "_bytes_per_step", bytes[kind]);
        }
        json.addProperty("output_dir", outputDir.toAbsolutePath().toString());
        Files.writeString(
                scratch.resolve(SUMMARY),
                new GsonBuilder().setPrettyPrinting().create().toJson(json),
                StandardCharsets.UTF_8);
        StringBuilder text = new StringBuilder("summary:");
        text.append(
                String.format(
                        Locale.ROOT,
                        "%n  steps %d, final train loss %.4f, %.0f tokens/s",
                        outcome.getSteps(),
                        outcome.getLastLoss(),
                        outcome.getTokensPerSecond()));
        if (!Double.isNaN(outcome.getLastEvalLoss())) {
            text.append(
                    String.format(
                            Locale.ROOT,
                            "%n  eval loss %.4f -> %.4f (best %.4f), perplexity %.2f",
                            outcome.getFirstEvalLoss(),
                            outcome.getLastEvalLoss(),
                            outcome.getBestEvalLoss(),
                            Math.exp(outcome.getLastEvalLoss())));
        }
        if (before != null) {
            text.append(
                    String.format(
                            Locale.ROOT,
                            "%n  exact match %.1f%% -> %.1f%% on %d held-out questions",
                            100 * before.accuracy(),
                            100 * after.accuracy(),
                            after.total()));
        }
        for (int rank = 0; rank < peaks.length; rank++) {
            text.append(
                    String.format(
                            Locale.ROOT, "%n  rank %d peak RSS %.1f MB", rank, peaks[rank] / 1e6));
        }
        if (sent.total() > 0) {
            text.append(String.format("%n  busiest rank, last step: %s", sent.format("_per_step")));
        }
        String files =
                Files.exists(plotFile())
                        ? MetricsLog.FILE + ", " + CurvePlot.FILE + " and " + SUMMARY
                        : MetricsLog.FILE + " and " + SUMMARY;
        text.append(String.format("%n  model, %s in %s", files, outputDir));
        return text.toString();
    }

    /**
     * Copies the run's files into the staging output directory.
     *
     * @param directory the staging directory
     * @throws IOException if a file cannot be copied
     */
    public void copyRunFiles(Path directory) throws IOException {
        Files.copy(metricsFile, directory.resolve(MetricsLog.FILE));
        for (String name : new String[] {CurvePlot.FILE, SUMMARY}) {
            Path file = scratch.resolve(name);
            if (Files.exists(file)) {
                Files.copy(file, directory.resolve(name));
            }
        }
    }

    @Override
    public void close() throws IOException {
        try (Stream<Path> files = Files.list(scratch)) {
            for (Path file : files.toList()) {
                Files.delete(file);
            }
        }
        Files.delete(scratch);
    }
}
