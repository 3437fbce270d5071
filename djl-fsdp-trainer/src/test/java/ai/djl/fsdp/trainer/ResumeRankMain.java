package ai.djl.fsdp.trainer;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.util.Pair;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * One rank of a training run that saves and resumes sharded checkpoints: {@link TinyLm} under
 * FULL_SHARD with AdamW, on global batches of {@link #GLOBAL_ROWS} rows per micro-batch whatever
 * the number of ranks (each rank takes its equal slice), so runs on different numbers of ranks
 * train on the same samples.
 *
 * <p>Arguments: the output file (this rank's is it with {@code -<rank>} appended), the number of
 * steps, the checkpoint to resume from ({@code -} for none), the directory to save {@code
 * checkpoint-<step>} into ({@code -}), the steps after which to save (comma-separated, {@code -}),
 * {@code sync} or {@code async}, the dropout rate, the gradient accumulation steps, and whether the
 * middle block's norm is frozen; optionally how many of the newest checkpoints to keep ({@code
 * save_total_limit}; all when absent or 0) and the sharding strategy (FULL_SHARD when absent; the
 * hybrid ones in shard groups of {@link Scenario#HYBRID_SHARD_GROUP}). The steps after which to
 * save may be {@code every}. The file gets this rank's loss of every step it ran, by step.
 */
public final class ResumeRankMain {

    static final int GLOBAL_ROWS = 8;

    /** The file rank 0 writes the trained parameters to, in the save directory. */
    static final String FINAL = "final";

    private ResumeRankMain() {}

    public static void main(String[] args) throws Exception {
        List<Integer> saveAfter = new ArrayList<>();
        if ("every".equals(args[4])) {
            for (int step = 1; step <= Integer.parseInt(args[1]); step++) {
                saveAfter.add(step);
            }
        } else if (!"-".equals(args[4])) {
            for (String step : args[4].split(",")) {
                saveAfter.add(Integer.parseInt(step));
            }
        }
        run(
                Path.of(args[0]),
                Integer.parseInt(args[1]),
                "-".equals(args[2]) ? null : Path.of(args[2]),
                "-".equals(args[3]) ? null : Path.of(args[3]),
                saveAfter,
                "async".equals(args[5]),
                Float.parseFloat(args[6]),
                Integer.parseInt(args[7]),
                Boolean.parseBoolean(args[8]),
                args.length > 9 ? Integer.parseInt(args[9]) : 0,
                args.length > 10
                        ? ShardingStrategy.valueOf(args[10])
                        : ShardingStrategy.FULL_SHARD);
    }

    /**
     * Runs as {@link #run(Path, int, Path, Path, List, boolean, float, int, boolean, int)} does,
     * keeping every checkpoint.
     */
    static void run(
            Path out,
            int steps,
            Path resumeFrom,
            Path saveDir,
            List<Integer> saveAfter,
            boolean async,
            float dropout,
            int accumulation,
            boolean freeze)
            throws Exception {
        run(
                out,
                steps,
                resumeFrom,
                saveDir,
                saveAfter,
                async,
                dropout,
                accumulation,
                freeze,
                0,
                ShardingStrategy.FULL_SHARD);
    }

    /**
     * Runs as this process's rank of the job in the environment (one rank without one).
     *
     * @param out the output file; this rank's is it with {@code -<rank>} appended
     * @param keepNewest how many of the newest checkpoints to keep; 0 for all
     * @param strategy how the model is sharded
     */
    static void run(
            Path out,
            int steps,
            Path resumeFrom,
            Path saveDir,
            List<Integer> saveAfter,
            boolean async,
            float dropout,
            int accumulation,
            boolean freeze,
            int keepNewest,
            ShardingStrategy strategy)
            throws Exception {
        List<String> lines = new ArrayList<>();
        Path file;
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment());
                Model model = Model.newInstance("tiny-lm", Device.cpu())) {
            file = Path.of(out + "-" + group.getRank());
            model.setBlock(new TinyLm(dropout));
            DefaultTrainingConfig config =
                    new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                            .optOptimizer(
                                    Optimizer.adamW()
                                            .optLearningRateTracker(Tracker.fixed(0.05f))
                                            .build())
                            .optDevices(new Device[] {Device.cpu()});
            FsdpConfig.Builder fsdp =
                    FsdpConfig.builder()
                            .optShardingStrategy(strategy)
                            .optWrapPolicy(WrapPolicy.byLayerClass("MixerBlock"));
            if (strategy.isHybrid()) {
                fsdp.optShardGroupSize(Scenario.HYBRID_SHARD_GROUP);
            }
            TrainerOptions options =
                    TrainerOptions.builder().optGradientAccumulationSteps(accumulation).build();
            try (FsdpTrainer trainer =
                    FullyShardedDataParallel.newTrainer(
                            model, config, group, fsdp.build(), options)) {
                Engine.getInstance().setRandomSeed(1234);
                if (freeze) {
                    ((TinyLm) model.getBlock()).freezeMiddleNorm();
                }
                int local = GLOBAL_ROWS / group.getSize();
                trainer.initialize(new Shape(local, Scenario.SEQUENCE));
                if (resumeFrom != null) {
                    trainer.loadCheckpoint(resumeFrom);
                }
                for (long step = trainer.getTrainingState().getStep(); step < steps; step++) {
                    double loss = 0;
                    for (int micro = 0; micro < accumulation; micro++) {
                        loss += trainOn(trainer, step, micro, group.getRank() * local, local);
                        trainer.step(); // counts the micro-batch; every last one updates
                    }
                    lines.add(step + " " + loss / accumulation);
                    if (saveAfter.contains((int) step + 1)) {
                        Path directory = CheckpointDirectory.of(saveDir, step + 1);
                        trainer.sharded().saveCheckpoint(directory, async, keepNewest);
                    }
                }
            } // closing gathers the trained parameters into the model
            if (saveDir != null && group.getRank() == 0) {
                // The trained parameters, to compare checkpoints with: a name and values per line.
                List<String> parameters = new ArrayList<>();
                for (Pair<String, Parameter> pair : model.getBlock().getParameters()) {
                    StringBuilder line = new StringBuilder(pair.getKey());
                    for (float value : pair.getValue().getArray().toFloatArray()) {
                        line.append(' ').append(value);
                    }
                    parameters.add(line.toString());
                }
                Files.write(saveDir.resolve(FINAL), parameters);
            }
        }
        Files.write(file, lines);
    }

    /** One micro-batch on this rank's rows of the step's global batch; returns its loss. */
    private static double trainOn(FsdpTrainer trainer, long step, int micro, int first, int rows) {
        Random random = new Random(1000L + 31 * step + micro);
        int[][] tokens = new int[GLOBAL_ROWS][Scenario.SEQUENCE + 1];
        for (int[] row : tokens) {
            for (int t = 0; t < row.length; t++) {
                row[t] = random.nextInt(TinyLm.VOCAB);
            }
        }
        try (NDManager scope = trainer.getManager().newSubManager()) {
            int[] data = new int[rows * Scenario.SEQUENCE];
            int[] labels = new int[rows * Scenario.SEQUENCE];
            for (int r = 0; r < rows; r++) {
                for (int t = 0; t < Scenario.SEQUENCE; t++) {
                    data[r * Scenario.SEQUENCE + t] = tokens[first + r][t];
                    labels[r * Scenario.SEQUENCE + t] = tokens[first + r][t + 1];
                }
            }
            NDList x = new NDList(scope.create(data, new Shape(rows, Scenario.SEQUENCE)));
            NDList y = new NDList(scope.create(labels, new Shape(rows, Scenario.SEQUENCE, 1)));
            try (GradientCollector collector = trainer.newGradientCollector()) {
                NDArray value = trainer.getLoss().evaluate(y, trainer.forward(x, y));
                double loss = value.getFloat();
                collector.backward(value);
                return loss;
            }
        }
    }
}
