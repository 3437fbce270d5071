package ai.djl.fsdp.bench.load;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.TrainerOptions;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.finetune.report.PeakMemory;
import ai.djl.fsdp.zoo.gpt2.GPT2Config;
import ai.djl.fsdp.zoo.hf.CheckpointShardSource;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.loss.Loss;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Measures the peak resident memory ({@code VmHWM}) of loading a Hugging Face checkpoint:
 *
 * <ul>
 *   <li>{@code create DIR}: saves a GPT-2 of 12 layers, width 768 (124M parameters, ~500 MB in
 *       float32) with random weights, once.
 *   <li>{@code whole DIR}: loads it into one process, as {@code Models.load} does.
 *   <li>{@code baseline DIR}: only starts the engine and joins the job, for the memory every rank
 *       holds before any model (the JVM, libtorch).
 *   <li>{@code sharded DIR}: every rank of the job (run it under {@code bin/fsdp launch}) shards it
 *       straight from the files into a FULL_SHARD trainer, reading only its own shards.
 * </ul>
 *
 * Each rank prints {@code mode=.. rank=.. peak_rss_mb=.. rss_anon_mb=.. rss_file_mb=..
 * shard_mb=..}.
 */
public final class LoadMemoryMain {

    /** Host memory is what this measures: the CPU even on a GPU host. */
    private static final ProcessGroupOptions ON_CPU =
            ProcessGroupOptions.builder().optDevice(Device.cpu()).build();

    private LoadMemoryMain() {}

    /**
     * Runs one mode.
     *
     * @param args the mode and the checkpoint directory
     * @throws IOException if the checkpoint cannot be read or written
     */
    public static void main(String[] args) throws IOException {
        if (args.length != 2) {
            throw new IllegalArgumentException(
                    "usage: LoadMemoryMain create|whole|baseline|sharded DIR");
        }
        Path directory = Path.of(args[1]);
        switch (args[0]) {
            case "create" -> create(directory);
            case "whole" -> whole(directory);
            case "baseline" -> baseline();
            case "sharded" -> sharded(directory);
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    private static void create(Path directory) throws IOException {
        try (NDManager manager = Engine.getEngine("PyTorch").newBaseManager()) {
            Engine.getEngine("PyTorch").setRandomSeed(1);
            CausalLM model = Models.create(GPT2Config.of(12, 768, 12, 1024), manager);
            HfCheckpoint.save(model, directory);
        }
        report("create", 0, 0);
    }

    private static void whole(Path directory) throws IOException {
        try (NDManager manager = Engine.getEngine("PyTorch").newBaseManager()) {
            Models.load(directory, manager);
            report("whole", 0, 0);
        }
    }

    private static void baseline() throws IOException {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment(), ON_CPU);
                NDManager manager = Engine.getEngine("PyTorch").newBaseManager()) {
            manager.ones(new Shape(1)).sum().getFloat(); // the engine is loaded and has run
            report("baseline", group.getRank(), 0);
        }
    }

    private static void sharded(Path directory) throws IOException {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment(), ON_CPU);
                Model model = Model.newInstance("load", Device.cpu())) {
            CausalLM lm = Models.forCheckpoint(ModelFamilies.read(directory));
            model.setBlock(lm);
            FsdpTrainer trainer;
            try (CheckpointShardSource source = HfCheckpoint.shardSource(lm, directory)) {
                FsdpConfig fsdp =
                        FsdpConfig.builder().optWrapPolicy(lm.defaultWrapPolicy()).build();
                trainer =
                        FullyShardedDataParallel.newTrainer(
                                model,
                                new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                                        .optDevices(new Device[] {Device.cpu()}),
                                group,
                                fsdp,
                                TrainerOptions.builder().optInitialValues(source).build());
                trainer.initialize(new Shape(1, 1)); // unit by unit, reading the shards
            }
            // Measured before closing: closing gathers the whole model onto every rank.
            try (trainer) {
                report("sharded", group.getRank(), trainer.getShardingStats().parameterBytes());
            }
        }
    }

    private static void report(String mode, int rank, long shardBytes) throws IOException {
        // VmHWM counts the checkpoint's mapped file pages a rank touched as well as its own
        // memory; RssAnon and RssFile (now, not at the peak) tell them apart.
        System.out.printf(
                Locale.ROOT,
                "mode=%s rank=%d peak_rss_mb=%.1f rss_anon_mb=%.1f rss_file_mb=%.1f"
                        + " shard_mb=%.1f%n",
                mode,
                rank,
                PeakMemory.bytes("VmHWM") / 1e6,
                PeakMemory.bytes("RssAnon") / 1e6,
                PeakMemory.bytes("RssFile") / 1e6,
                shardBytes / 1e6);
    }
}
