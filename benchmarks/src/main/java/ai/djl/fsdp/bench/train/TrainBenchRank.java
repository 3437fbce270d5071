package ai.djl.fsdp.bench.train;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.dist.RankDevice;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.runtime.MixedPrecision;
import ai.djl.fsdp.tensor.OptimizerStates;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.ShardingStats;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.wrap.WrapPolicy;
import ai.djl.fsdp.zoo.finetune.CausalLmLoss;
import ai.djl.fsdp.zoo.finetune.PeakMemory;
import ai.djl.fsdp.zoo.gpt2.GPT2Block;
import ai.djl.fsdp.zoo.gpt2.GPT2LMHeadModel;
import ai.djl.fsdp.zoo.nn.AttentionKernel;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.util.Pair;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * One rank of the training benchmark, started by {@link TrainBenchCommand}: trains the model zoo's
 * GPT-2 ({@code GPT2LMHeadModel}, Hugging Face's initialization, dropout off) on random tokens with
 * AdamW, with FSDP in the given strategy ({@link GPT2Block}s are the units) or ({@code NONE}, one
 * rank) with DJL's ordinary trainer, and writes its measurements to {@code <report>.rank<r>}.
 */
@Command(name = "train-rank", mixinStandardHelpOptions = true)
public final class TrainBenchRank implements Callable<Integer> {

    /** The {@code --sharding} value that runs DJL's plain trainer as the baseline. */
    static final String BASELINE = "NONE";

    @Option(names = "--sharding", required = true)
    private String sharding;

    @Option(names = "--steps", required = true)
    private int steps;

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

    @Option(names = "--attention", required = true)
    private String attention;

    @Option(names = "--precision", required = true)
    private String precision;

    @Option(names = "--reshard-after-forward", required = true, arity = "1")
    private boolean reshardAfterForward;

    @Option(names = "--activation-checkpointing", required = true, arity = "1")
    private boolean activationCheckpointing;

    @Option(names = "--lora-rank", required = true)
    private int loraRank;

    @Option(names = "--report", required = true)
    private Path report;

    /**
     * Runs one rank; the job comes from the environment (see {@link DistributedEnv}).
     *
     * @param args the options
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new TrainBenchRank()).execute(args));
    }

    /** Returns the command a launcher runs on every rank, for the given settings. */
    static List<String> command(TrainBenchSettings settings, Path report) {
        return List.of(
                TrainBenchRank.class.getName(),
                "--sharding=" + settings.sharding(),
                "--steps=" + settings.steps(),
                "--warmup=" + settings.warmup(),
                "--layers=" + settings.layers(),
                "--width=" + settings.width(),
                "--heads=" + settings.heads(),
                "--vocab=" + settings.vocab(),
                "--seq=" + settings.sequence(),
                "--batch=" + settings.batch(),
                "--attention=" + settings.attention(),
                "--precision=" + settings.precision(),
                "--reshard-after-forward=" + settings.reshardsAfterForward(),
                "--activation-checkpointing=" + settings.recomputes(),
                "--lora-rank=" + settings.loraRank(),
                "--report=" + report);
    }

    @Override
    public Integer call() throws IOException {
        DistributedEnv env = DistributedEnv.fromEnvironment();
        Device device = RankDevice.of(env);
        boolean baseline = BASELINE.equals(sharding);
        Optimizer optimizer =
                Optimizer.adamW().optLearningRateTracker(Tracker.fixed(1e-4f)).build();
        // No initializer here: the zoo's parameters carry GPT-2's own.
        DefaultTrainingConfig config =
                // The zoo's loss: log-softmax over the vocabulary in float32 at any precision.
                new DefaultTrainingConfig(new CausalLmLoss())
                        .optOptimizer(optimizer)
                        .optDevices(new Device[] {device});
        Engine.getInstance().setRandomSeed(42);
        try (Model model = Model.newInstance("gpt2-bench", device);
                ProcessGroup group = baseline ? null : ProcessGroups.init(env)) {
            GPT2LMHeadModel network = settings(env).modelConfig().newModel();
            AttentionKernel.of(attention).applyTo(network);
            if (loraRank > 0) {
                // Adapters need the base's weights: initialize first, the trainer then shards.
                network.initialize(
                        model.getNDManager(), DataType.FLOAT32, new Shape(batch, sequence));
                Lora.apply(
                        network,
                        LoraConfig.builder()
                                .setTargetModules(List.of(LoraConfig.ALL_LINEAR))
                                .optRank(loraRank)
                                .optAlpha(2 * loraRank)
                                .build());
            }
            model.setBlock(network);
            try (Trainer trainer = newTrainer(model, config, group)) {
                if (!network.isInitialized()) {
                    trainer.initialize(new Shape(batch, sequence));
                }
                StepTimes times = timeSteps(trainer);
                long modelState;
                long sent;
                long waitNanos;
                if (trainer instanceof FsdpTrainer) {
                    ShardingStats stats = ((FsdpTrainer) trainer).getShardingStats();
                    modelState = stats.modelStateBytes();
                    sent = stats.sentBytesLastStep();
                    waitNanos = stats.waitNanosLastStep();
                } else {
                    modelState = replicaModelState(model, optimizer);
                    sent = 0;
                    waitNanos = 0;
                }
                String line =
                        String.format(
                                Locale.ROOT,
                                "step_ms=%.1f loss=%.6f peak_rss_mb=%.1f model_state_mb=%.1f"
                                        + " sent_mb=%.1f comm_wait_ms=%.1f",
                                times.meanMillis(),
                                times.lastLoss(),
                                peakRssBytes() / 1e6,
                                modelState / 1e6,
                                sent / 1e6,
                                waitNanos / 1e6);
                Path file = Path.of(report + ".rank" + env.getRank());
                Files.writeString(file, line + System.lineSeparator(), StandardCharsets.UTF_8);
            }
        }
        return 0;
    }

    private Trainer newTrainer(Model model, DefaultTrainingConfig config, ProcessGroup group) {
        if (group == null) {
            return model.newTrainer(config);
        }
        FsdpConfig fsdp =
                FsdpConfig.builder()
                        .optShardingStrategy(ShardingStrategy.valueOf(sharding))
                        .optReshardAfterForward(reshardAfterForward)
                        .optActivationCheckpointing(activationCheckpointing)
                        .optWrapPolicy(WrapPolicy.byLayerClass(GPT2Block.class.getSimpleName()))
                        .optMixedPrecision(MixedPrecision.of(precision))
                        .build();
        return FullyShardedDataParallel.newTrainer(model, config, group, fsdp);
    }

    /** The timed steps' mean duration and the loss of the last step. */
    private record StepTimes(double meanMillis, float lastLoss) {}

    /** Trains {@code warmup} then {@code steps} steps on random tokens. */
    private StepTimes timeSteps(Trainer trainer) {
        NDManager manager = trainer.getManager();
        long start = 0;
        float loss = Float.NaN;
        for (int step = 0; step < warmup + steps; step++) {
            if (step == warmup) {
                start = System.nanoTime();
            }
            try (NDManager scope = manager.newSubManager()) {
                // Random tokens: their values do not change the cost of a step.
                NDArray all =
                        scope.randomInteger(
                                0, vocab, new Shape(batch, sequence + 1), DataType.INT64);
                NDList data = new NDList(all.get(":, :-1"));
                NDList labels = new NDList(all.get(":, 1:").reshape(batch, sequence, 1));
                try (GradientCollector collector = trainer.newGradientCollector()) {
                    NDList predictions = trainer.forward(data, labels);
                    NDArray value = trainer.getLoss().evaluate(labels, predictions);
                    collector.backward(value);
                    if (step == warmup + steps - 1) {
                        loss = value.toType(DataType.FLOAT32, false).getFloat();
                    }
                }
                trainer.step();
            }
        }
        return new StepTimes((System.nanoTime() - start) / 1e6 / steps, loss);
    }

    /**
     * Parameters, their gradients and the optimizer's state in DJL's ordinary trainer; the head
     * tied to the token embedding is one parameter listed twice and counts once.
     */
    private static long replicaModelState(Model model, Optimizer optimizer) {
        long bytes = 0;
        Set<String> ids = new HashSet<>();
        for (Pair<String, Parameter> pair : model.getBlock().getParameters()) {
            Parameter parameter = pair.getValue();
            if (!ids.add(parameter.getId())) {
                continue;
            }
            NDArray array = parameter.getArray();
            long size = array.size() * array.getDataType().getNumOfBytes();
            bytes += parameter.requiresGradient() ? 2 * size : size;
        }
        return bytes + OptimizerStates.bytes(optimizer, ids);
    }

    private TrainBenchSettings settings(DistributedEnv env) {
        return new TrainBenchSettings(
                env.getWorldSize(),
                sharding,
                steps,
                warmup,
                layers,
                width,
                heads,
                vocab,
                sequence,
                batch,
                attention,
                precision,
                reshardAfterForward,
                activationCheckpointing,
                loraRank);
    }

    /** The process's resident-set high-water mark ({@code VmHWM}), in bytes. */
    static long peakRssBytes() throws IOException {
        long bytes = PeakMemory.bytes("VmHWM");
        if (bytes < 0) {
            throw new IOException("/proc/self/status has no VmHWM line");
        }
        return bytes;
    }
}
