package ai.djl.fsdp.bench.checkpoint;

import ai.djl.Model;
import ai.djl.fsdp.bench.gpt.GptOptions;
import ai.djl.fsdp.bench.gpt.GptRank;
import ai.djl.fsdp.bench.gpt.GptShape;
import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.zoo.finetune.report.PeakMemory;
import ai.djl.fsdp.zoo.gpt2.GPT2Config;
import ai.djl.fsdp.zoo.gpt2.GPT2LMHeadModel;
import ai.djl.fsdp.zoo.sharded.ShardedSave;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.loss.Loss;
import ai.djl.util.Pair;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * One rank of the checkpoint benchmark, started by {@link CheckpointBenchCommand}. Each repetition
 * runs, in this order: a plain training step; a synchronous sharded save; a plain step; an
 * asynchronous sharded save, the step that runs while it is written, and the wait for it; a full
 * Hugging Face save; a sharded load of the synchronous checkpoint. Peak RSS is measured per phase:
 * the high-water mark is reset ({@code /proc/self/clear_refs} = 5) before each. Writes {@code name
 * value} lines (medians) to {@code <report>.rank<r>}.
 */
@Command(name = "checkpoint-rank", mixinStandardHelpOptions = true)
public final class CheckpointBenchRank implements Callable<Integer> {

    @Mixin private GptOptions gpt = new GptOptions();

    @Mixin private CheckpointOptions checkpoint;

    @Mixin private GptRank rank = new GptRank();

    private GptShape shape;
    private Path directory;
    private final Map<String, List<Double>> samples = new LinkedHashMap<>();
    private boolean peakResets = true;
    private long phaseStartRss;

    /**
     * Runs one rank; the job comes from the environment (see {@link DistributedEnv}).
     *
     * @param args the options
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new CheckpointBenchRank()).execute(args));
    }

    @Override
    public Integer call() throws IOException {
        checkpoint.check(rank.env().getWorldSize(), gpt);
        shape = gpt.shape();
        directory = checkpoint.directory(rank.report());
        try (Model model = rank.newModel("gpt2-checkpoint-bench");
                ProcessGroup group = ProcessGroups.init(rank.env())) {
            GPT2LMHeadModel lm = modelConfig().newModel();
            model.setBlock(lm);
            DefaultTrainingConfig config = rank.trainingConfig(Loss.softmaxCrossEntropyLoss());
            try (FsdpTrainer trainer =
                    FullyShardedDataParallel.newTrainer(
                            model, config, group, GptRank.fsdpConfig().build())) {
                trainer.initialize(new Shape(shape.batch(), shape.sequence()));
                record("param_mb", parameterBytes(lm) / 1e6);
                for (int step = 0; step < gpt.warmup(); step++) {
                    GptRank.step(trainer, shape, false);
                }
                if (group.getRank() == 0) {
                    Files.createDirectories(directory);
                }
                repeatThenDelete(
                        group,
                        directory,
                        () -> {
                            for (int r = 0; r < checkpoint.repeats(); r++) {
                                repetition(trainer, lm, group, r);
                            }
                        });
            }
        }
        record(CheckpointBenchReport.PEAK_RESET, peakResets ? 1 : 0);
        List<String> lines = new ArrayList<>();
        samples.forEach((name, values) -> lines.add(name + " " + median(values)));
        rank.write(lines);
        return 0;
    }

    private void repetition(FsdpTrainer trainer, GPT2LMHeadModel lm, ProcessGroup group, int r)
            throws IOException {
        boolean writer = group.getRank() == 0;
        long start = resetPeak();
        GptRank.step(trainer, shape, false);
        record("step_s", seconds(start));
        recordPeak("step");

        Path sync = directory.resolve("sync-" + r);
        start = resetPeak();
        trainer.saveCheckpoint(sync);
        record("sharded_save_sync_blocked_s", seconds(start));
        recordPeak("sharded_save");
        if (writer) {
            record("sharded_bytes_mb", treeBytes(sync) / 1e6);
        }
        GptRank.step(trainer, shape, false);

        Path async = directory.resolve("async-" + r);
        start = resetPeak();
        trainer.saveCheckpointAsync(async);
        record("sharded_save_async_blocked_s", seconds(start));
        start = System.nanoTime();
        GptRank.step(trainer, shape, false);
        record("step_during_async_write_s", seconds(start));
        start = System.nanoTime();
        trainer.awaitCheckpoint();
        record("async_write_wait_after_step_s", seconds(start));
        recordPeak("async_save_and_step");

        Path full = directory.resolve("full-" + r);
        start = resetPeak();
        ShardedSave.merged(trainer, lm, full);
        record("full_save_s", seconds(start));
        recordPeak("full_save");
        group.barrier();
        if (writer) {
            record("full_bytes_mb", treeBytes(full) / 1e6);
        }

        start = resetPeak();
        trainer.loadCheckpoint(sync);
        record("sharded_load_s", seconds(start));
        recordPeak("sharded_load");
        group.barrier();
        if (writer) {
            for (Path written : List.of(sync, async, full)) {
                CheckpointDirectory.deleteTree(written);
            }
        }
    }

    /** The benchmark's repetitions, which write under the checkpoint directory. */
    @FunctionalInterface
    interface Repetitions {

        /**
         * Runs them.
         *
         * @throws IOException if a checkpoint cannot be written or read
         */
        void run() throws IOException;
    }

    /**
     * Runs {@code repetitions}, then rank 0 deletes {@code directory} once every rank is done with
     * it (a barrier). When they fail on this rank, it waits for no other: the others may be in a
     * collective this rank will never join, so a barrier would wait out the timeout and its error
     * replace the real one. Rank 0 then deletes what it can at once; a failure to delete is added
     * to the error as suppressed.
     *
     * @param group the ranks
     * @param directory the checkpoint directory the repetitions write in
     * @param repetitions what this rank runs
     * @throws IOException if the repetitions or the deletion fail
     */
    static void repeatThenDelete(ProcessGroup group, Path directory, Repetitions repetitions)
            throws IOException {
        try {
            repetitions.run();
        } catch (IOException | RuntimeException | Error e) {
            if (group.getRank() == 0) {
                try {
                    CheckpointDirectory.deleteTree(directory);
                } catch (IOException | RuntimeException deleting) {
                    e.addSuppressed(deleting);
                }
            }
            throw e;
        }
        group.barrier();
        if (group.getRank() == 0) {
            CheckpointDirectory.deleteTree(directory);
        }
    }

    /** The GPT-2 of the options, with the 124M model's 1024 positions whatever {@code --seq}. */
    private GPT2Config modelConfig() {
        JsonObject json = shape.modelConfig().toJson();
        json.addProperty("n_positions", CheckpointOptions.POSITIONS);
        return GPT2Config.fromJson(json);
    }

    /** The model's parameters in bytes, the tied head counted once (shapes survive sharding). */
    private static long parameterBytes(GPT2LMHeadModel lm) {
        long bytes = 0;
        Set<String> ids = new HashSet<>();
        for (Pair<String, Parameter> pair : lm.getParameters()) {
            if (ids.add(pair.getValue().getId())) {
                bytes += pair.getValue().getShape().size() * Float.BYTES;
            }
        }
        return bytes;
    }

    /** Resets the resident-set high-water mark to the current resident set; returns the time. */
    private long resetPeak() {
        phaseStartRss = PeakMemory.bytes("VmRSS");
        if (!PeakMemory.resetPeak()) {
            peakResets = false; // the peaks are then the process's, not the phase's
        }
        return System.nanoTime();
    }

    /** Records a phase's peak RSS and how far it rose above the RSS at the phase's start. */
    private void recordPeak(String phase) {
        long peak = PeakMemory.bytes("VmHWM");
        record("peak_rss_" + phase + "_mb", peak / 1e6);
        record("rss_rise_" + phase + "_mb", (peak - phaseStartRss) / 1e6);
    }

    private static long treeBytes(Path root) throws IOException {
        try (Stream<Path> files = Files.walk(root)) {
            long bytes = 0;
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                bytes += Files.size(file);
            }
            return bytes;
        }
    }

    private static double seconds(long start) {
        return (System.nanoTime() - start) / 1e9;
    }

    private void record(String name, double value) {
        samples.computeIfAbsent(name, key -> new ArrayList<>()).add(value);
    }

    private static double median(List<Double> values) {
        List<Double> sorted = values.stream().sorted().toList();
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }
}
