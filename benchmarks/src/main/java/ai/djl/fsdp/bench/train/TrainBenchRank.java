package ai.djl.fsdp.bench.train;

import ai.djl.Model;
import ai.djl.fsdp.bench.gpt.GptOptions;
import ai.djl.fsdp.bench.gpt.GptRank;
import ai.djl.fsdp.bench.gpt.GptShape;
import ai.djl.fsdp.bench.ops.OperatorTrace;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.reflect.OptimizerStates;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.MixedPrecision;
import ai.djl.fsdp.trainer.ShardingStats;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.trainer.metrics.SentBytes;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.finetune.report.PeakMemory;
import ai.djl.fsdp.zoo.nn.AttentionKernel;
import ai.djl.fsdp.zoo.sharded.CausalLmLoss;
import ai.djl.fsdp.zoo.sharded.ShardedStart;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.Trainer;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.util.Pair;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * One rank of the training benchmark, started by {@link TrainBenchCommand}: trains the model zoo's
 * GPT-2 ({@code GPT2LMHeadModel}, Hugging Face's initialization, dropout off), or the {@code
 * --model} family at its shape ({@link BenchModel}), on random tokens with AdamW, with FSDP in the
 * given strategy (the family's decoder layers, {@code GPT2Block}s for GPT-2, are the units) or
 * ({@code NONE}, one rank) with DJL's ordinary trainer, and writes its measurements to {@code
 * <report>.rank<r>}.
 */
@Command(name = "train-rank", mixinStandardHelpOptions = true)
public final class TrainBenchRank implements Callable<Integer> {

    @Mixin private GptOptions gpt = new GptOptions();

    @Mixin private TrainOptions training;

    @Mixin private GptRank rank = new GptRank();

    /**
     * Runs one rank; the job comes from the environment (see {@link DistributedEnv}).
     *
     * @param args the options
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new TrainBenchRank()).execute(args));
    }

    @Override
    public Integer call() throws IOException {
        TrainBenchSettings settings = training.settings(rank.env().getWorldSize(), gpt);
        settings.check();
        GptShape shape = settings.shape();
        boolean baseline = TrainBenchSettings.BASELINE.equals(settings.sharding());
        // The zoo's loss: the head's product with log-softmax over the vocabulary (float32).
        DefaultTrainingConfig config = rank.trainingConfig(new CausalLmLoss());
        try (Model model = rank.newModel("gpt2-bench");
                ProcessGroup group = baseline ? null : ProcessGroups.init(rank.env())) {
            // A JVM with libtorch loaded and the ranks linked, before any model: what any rank
            // holds whatever FSDP does.
            long idleRss = PeakMemory.bytes("VmRSS");
            CausalLM network = settings.modelConfig().newCausalLM();
            // The loss computes the tied head's product chunk by chunk, as finetune does.
            network.setFusedLossHead(true);
            AttentionKernel.of(settings.attention()).applyTo(network);
            int loraRank = settings.loraRank();
            LoraConfig lora =
                    loraRank == 0
                            ? null
                            : LoraConfig.builder()
                                    .setTargetModules(List.of(LoraConfig.ALL_LINEAR))
                                    .optRank(loraRank)
                                    .optAlpha(2 * loraRank)
                                    .build();
            ShardedStart start = null;
            Trainer trainer;
            if (group == null) {
                // DJL's own trainer holds the whole model: the baseline the shards are held to.
                if (lora != null) {
                    Lora.apply(network, lora);
                }
                model.setBlock(network);
                trainer = model.newTrainer(config);
                trainer.initialize(new Shape(shape.batch(), shape.sequence()));
            } else {
                // As finetune starts: unit by unit, each rank keeping only its shards.
                start =
                        ShardedStart.initialize(
                                model,
                                network,
                                null,
                                lora,
                                (m, lm, source) -> newTrainer(settings, lm, m, config, group));
                trainer = start.trainer();
            }
            try (trainer) {
                long initPeak = peakRssBytes();
                boolean reset = PeakMemory.resetPeak();
                StepTimes times = timeSteps(settings, trainer);
                // Without the reset the steps' peak is the process's (initialization included).
                long stepPeak = peakRssBytes();
                long modelState;
                SentBytes sent;
                long across;
                long waitNanos;
                long ideal;
                if (start != null) {
                    ShardingStats stats = start.trainer().getShardingStats();
                    modelState = stats.modelStateBytes();
                    sent = stats.sentByKindLastStep();
                    across = stats.sentAcrossBytesLastStep();
                    waitNanos = stats.waitNanosLastStep();
                    ideal = start.idealBytes();
                } else {
                    modelState = replicaModelState(model, config.getOptimizer());
                    sent = SentBytes.NONE;
                    across = 0;
                    waitNanos = 0;
                    ideal = modelState;
                }
                long peakRss = Math.max(initPeak, stepPeak);
                // Last, as it slows the step it profiles: every rank steps, rank 0 records.
                int operators = -1;
                if (training.opProfile() != null) {
                    Runnable step = () -> GptRank.step(trainer, shape, false);
                    if (rank.env().getRank() == 0) {
                        operators =
                                OperatorTrace.record(training.opProfile(), step).getTopLevelTotal();
                    } else {
                        step.run();
                    }
                }
                rank.write(
                        List.of(
                                String.format(
                                        Locale.ROOT,
                                        "step_ms=%.1f loss=%.6f peak_rss_mb=%.1f"
                                                + " model_state_mb=%.1f sent_mb=%.1f"
                                                + " sent_across_mb=%.1f comm_wait_ms=%.1f"
                                                + " ideal_mb=%.1f rss_over_ideal=%.3f"
                                                + " idle_rss_mb=%.1f init_peak_rss_mb=%.1f"
                                                + " step_peak_rss_mb=%.1f"
                                                + " above_idle_over_ideal=%.3f cpu_ms=%.1f"
                                                + " ops=%d %s",
                                        times.meanMillis(),
                                        times.lastLoss(),
                                        peakRss / 1e6,
                                        modelState / 1e6,
                                        sent.total() / 1e6,
                                        across / 1e6,
                                        waitNanos / 1e6,
                                        ideal / 1e6,
                                        peakRss / (double) ideal,
                                        idleRss / 1e6,
                                        initPeak / 1e6,
                                        reset ? stepPeak / 1e6 : Double.NaN,
                                        (peakRss - idleRss) / (double) ideal,
                                        times.cpuMillis(),
                                        operators,
                                        sent.format(""))));
            }
        }
        return 0;
    }

    private static FsdpTrainer newTrainer(
            TrainBenchSettings settings,
            CausalLM lm,
            Model model,
            DefaultTrainingConfig config,
            ProcessGroup group) {
        FsdpConfig.Builder fsdp =
                FsdpConfig.builder()
                        .optWrapPolicy(lm.defaultWrapPolicy())
                        .optShardingStrategy(ShardingStrategy.valueOf(settings.sharding()))
                        .optReshardAfterForward(settings.reshardsAfterForward())
                        .optActivationCheckpointing(settings.checkpointing())
                        .optMixedPrecision(MixedPrecision.of(settings.precision()))
                        .optCommunicationQuantization(settings.quantization());
        if (settings.shardGroupSize() > 0) {
            fsdp.optShardGroupSize(settings.shardGroupSize());
        }
        return FullyShardedDataParallel.newTrainer(model, config, group, fsdp.build());
    }

    /**
     * The timed steps' mean duration, the process's CPU time per timed step (every thread: compute,
     * communication, the JVM's), and the loss of the last step.
     */
    private record StepTimes(double meanMillis, double cpuMillis, float lastLoss) {}

    /** Trains the warmup steps, then the timed steps. */
    private static StepTimes timeSteps(TrainBenchSettings settings, Trainer trainer) {
        int warmup = settings.warmup();
        int steps = settings.steps();
        long start = 0;
        long cpuStart = 0;
        float loss = Float.NaN;
        for (int step = 0; step < warmup + steps; step++) {
            if (step == warmup) {
                start = System.nanoTime();
                cpuStart = processCpuNanos();
            }
            loss = GptRank.step(trainer, settings.shape(), step == warmup + steps - 1);
        }
        return new StepTimes(
                (System.nanoTime() - start) / 1e6 / steps,
                (processCpuNanos() - cpuStart) / 1e6 / steps,
                loss);
    }

    /** The CPU time this process has used, all threads, or -1 where the JVM cannot tell. */
    private static long processCpuNanos() {
        if (ManagementFactory.getOperatingSystemMXBean()
                instanceof com.sun.management.OperatingSystemMXBean os) {
            return os.getProcessCpuTime();
        }
        return -1;
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

    /** The process's resident-set high-water mark ({@code VmHWM}), in bytes. */
    private static long peakRssBytes() throws IOException {
        long bytes = PeakMemory.bytes("VmHWM");
        if (bytes < 0) {
            throw new IOException("/proc/self/status has no VmHWM line");
        }
        return bytes;
    }
}
