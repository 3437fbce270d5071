package ai.djl.fsdp.bench.checkpoint;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.fsdp.bench.train.TrainBenchSettings;
import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.dist.RankDevice;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.wrap.WrapPolicy;
import ai.djl.fsdp.zoo.finetune.PeakMemory;
import ai.djl.fsdp.zoo.gpt2.GPT2Block;
import ai.djl.fsdp.zoo.gpt2.GPT2Config;
import ai.djl.fsdp.zoo.gpt2.GPT2LMHeadModel;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.util.Pair;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
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
import picocli.CommandLine.Option;

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

    private static final Path CLEAR_REFS = Path.of("/proc/self/clear_refs");

    @Option(names = "--repeats", required = true)
    private int repeats;

    @Option(names = "--warmup", required = true)
    private int warmup;

    @Option(names = "--layers", required = true)
    private int layers;

    @Option(names = "--width", required = true)
    private int width;

    @Option(names = "--heads", required = true)
    private int heads;

    @Option(names = "--vocab", required = true)
    private int vocab;

    @Option(names = "--seq", required = true)
    private int sequence;

    @Option(names = "--batch", required = true)
    private int batch;

    @Option(names = "--dir", required = true)
    private Path directory;

    @Option(names = "--report", required = true)
    private Path report;

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

    static List<String> command(TrainBenchSettings settings, Path parent, Path report) {
        return List.of(
                CheckpointBenchRank.class.getName(),
                "--repeats=" + settings.steps(),
                "--warmup=" + settings.warmup(),
                "--layers=" + settings.layers(),
                "--width=" + settings.width(),
                "--heads=" + settings.heads(),
                "--vocab=" + settings.vocab(),
                "--seq=" + settings.sequence(),
                "--batch=" + settings.batch(),
                "--dir=" + parent.resolve(report.getFileName() + ".checkpoints"),
                "--report=" + report);
    }

    @Override
    public Integer call() throws IOException {
        DistributedEnv env = DistributedEnv.fromEnvironment();
        Device device = RankDevice.of(env);
        Engine.getInstance().setRandomSeed(42);
        try (Model model = Model.newInstance("gpt2-checkpoint-bench", device);
                ProcessGroup group = ProcessGroups.init(env)) {
            GPT2LMHeadModel lm = modelConfig(env).newModel();
            model.setBlock(lm);
            try (FsdpTrainer trainer = newTrainer(model, device, group)) {
                trainer.initialize(new Shape(batch, sequence));
                record("param_mb", parameterBytes(lm) / 1e6);
                for (int step = 0; step < warmup; step++) {
                    step(trainer);
                }
                if (group.getRank() == 0) {
                    Files.createDirectories(directory);
                }
                try {
                    for (int r = 0; r < repeats; r++) {
                        repetition(trainer, lm, group, r);
                    }
                } finally {
                    group.barrier();
                    if (group.getRank() == 0) {
                        CheckpointDirectory.deleteTree(directory);
                    }
                }
            }
        }
        record("peak_rss_reset", peakResets ? 1 : 0);
        List<String> lines = new ArrayList<>();
        samples.forEach((name, values) -> lines.add(name + " " + median(values)));
        Files.write(Path.of(report + ".rank" + env.getRank()), lines, StandardCharsets.UTF_8);
        return 0;
    }

    private void repetition(FsdpTrainer trainer, GPT2LMHeadModel lm, ProcessGroup group, int r)
            throws IOException {
        boolean writer = group.getRank() == 0;
        long start = resetPeak();
        step(trainer);
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
        step(trainer);

        Path async = directory.resolve("async-" + r);
        start = resetPeak();
        trainer.saveCheckpointAsync(async);
        record("sharded_save_async_blocked_s", seconds(start));
        start = System.nanoTime();
        step(trainer);
        record("step_during_async_write_s", seconds(start));
        start = System.nanoTime();
        trainer.awaitCheckpoint();
        record("async_write_wait_after_step_s", seconds(start));
        recordPeak("async_save_and_step");

        Path full = directory.resolve("full-" + r);
        start = resetPeak();
        HfCheckpoint.saveMerged(trainer, lm, full);
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

    /** The GPT-2 of the settings, with the 124M model's 1024 positions whatever {@code --seq}. */
    private GPT2Config modelConfig(DistributedEnv env) {
        JsonObject json =
                new TrainBenchSettings(
                                env.getWorldSize(),
                                "FULL_SHARD",
                                repeats,
                                warmup,
                                layers,
                                width,
                                heads,
                                vocab,
                                sequence,
                                batch,
                                CheckpointBenchCommand.ATTENTION,
                                "fp32",
                                null,
                                null,
                                0)
                        .modelConfig()
                        .toJson();
        json.addProperty("n_positions", CheckpointBenchCommand.POSITIONS);
        return GPT2Config.fromJson(json);
    }

    private static FsdpTrainer newTrainer(Model model, Device device, ProcessGroup group) {
        DefaultTrainingConfig config =
                new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                        .optOptimizer(
                                Optimizer.adamW()
                                        .optLearningRateTracker(Tracker.fixed(1e-4f))
                                        .build())
                        .optDevices(new Device[] {device});
        FsdpConfig fsdp =
                FsdpConfig.builder()
                        .optWrapPolicy(WrapPolicy.byLayerClass(GPT2Block.class.getSimpleName()))
                        .build();
        return FullyShardedDataParallel.newTrainer(model, config, group, fsdp);
    }

    /** One optimizer step on random tokens (their values do not change the cost). */
    private void step(FsdpTrainer trainer) {
        try (NDManager scope = trainer.getManager().newSubManager()) {
            NDArray all =
                    scope.randomInteger(0, vocab, new Shape(batch, sequence + 1), DataType.INT64);
            NDList data = new NDList(all.get(":, :-1"));
            NDList labels = new NDList(all.get(":, 1:").reshape(batch, sequence, 1));
            try (GradientCollector collector = trainer.newGradientCollector()) {
                NDList predictions = trainer.forward(data, labels);
                collector.backward(trainer.getLoss().evaluate(labels, predictions));
            }
            trainer.step();
        }
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
        try {
            Files.writeString(CLEAR_REFS, "5");
        } catch (IOException e) {
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
