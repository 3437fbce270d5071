package ai.djl.fsdp.bench.gpt;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.RankDevice;
import ai.djl.fsdp.optim.Adam;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.WrapPolicy;
import ai.djl.fsdp.zoo.gpt2.GPT2Block;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * What the ranks of the GPT-2 benchmarks share (a picocli mixin): the job and device from the
 * environment, the seeded model, AdamW, FSDP's GPT-2 wrap policy, a training step on random tokens,
 * and the report file {@code <report>.rank<r>} the command reads.
 */
public final class GptRank {

    @Option(names = "--report", required = true, description = "Where the command reads.")
    private Path report;

    private DistributedEnv env;

    /** Makes the mixin of a rank: {@code --report} comes from its command line. */
    public GptRank() {}

    /**
     * Makes the mixin a command re-emits to tell its ranks where to report.
     *
     * @param report the report file; rank {@code r} writes {@code report + ".rank" + r}
     */
    public GptRank(Path report) {
        this.report = report;
    }

    /**
     * Returns this rank's job, read from the environment (see {@link DistributedEnv}) once.
     *
     * @return the job
     */
    public DistributedEnv env() {
        if (env == null) {
            env = DistributedEnv.fromEnvironment();
        }
        return env;
    }

    /**
     * Returns the report file the command gave.
     *
     * @return {@code --report}
     */
    public Path report() {
        return report;
    }

    /**
     * Seeds the engine (every rank and run the same) and returns an empty model on this rank's
     * device.
     *
     * @param name the model's name
     * @return the model
     */
    public Model newModel(String name) {
        Engine.getInstance().setRandomSeed(42);
        return Model.newInstance(name, RankDevice.of(env()));
    }

    /**
     * Returns the training configuration of the benchmarks: AdamW at a fixed rate of 1e-4 on this
     * rank's device, no initializer (the zoo's parameters carry GPT-2's own).
     *
     * @param loss the loss
     * @return the configuration
     */
    public DefaultTrainingConfig trainingConfig(Loss loss) {
        // PyTorch's AdamW, as finetune trains.
        Optimizer optimizer =
                Adam.adamWBuilder().optLearningRateTracker(Tracker.fixed(1e-4f)).build();
        return new DefaultTrainingConfig(loss)
                .optOptimizer(optimizer)
                .optDevices(new Device[] {RankDevice.of(env())});
    }

    /**
     * Returns an FSDP configuration whose units are the {@link GPT2Block}s, to complete.
     *
     * @return the builder
     */
    public static FsdpConfig.Builder fsdpConfig() {
        return FsdpConfig.builder()
                .optWrapPolicy(WrapPolicy.byLayerClass(GPT2Block.class.getSimpleName()));
    }

    /**
     * Trains one step on random tokens (their values do not change the cost of a step).
     *
     * @param trainer the trainer
     * @param shape the batch's shape and the vocabulary
     * @param readLoss whether to read the step's loss back
     * @return the loss, or NaN if not read
     */
    public static float step(Trainer trainer, GptShape shape, boolean readLoss) {
        int batch = shape.batch();
        int sequence = shape.sequence();
        float loss = Float.NaN;
        try (NDManager scope = trainer.getManager().newSubManager()) {
            NDArray all =
                    scope.randomInteger(
                            0, shape.vocab(), new Shape(batch, sequence + 1), DataType.INT64);
            // Indices built, not parsed from strings: a step's host time is what this measures.
            NDList data = new NDList(all.get(new NDIndex().addAllDim().addSliceDim(0, sequence)));
            NDList labels =
                    new NDList(
                            all.get(new NDIndex().addAllDim().addSliceDim(1, sequence + 1))
                                    .reshape(batch, sequence, 1));
            try (GradientCollector collector = trainer.newGradientCollector()) {
                NDList predictions = trainer.forward(data, labels);
                NDArray value = trainer.getLoss().evaluate(labels, predictions);
                collector.backward(value);
                if (readLoss) {
                    loss = value.toType(DataType.FLOAT32, false).getFloat();
                }
            }
            trainer.step();
        }
        return loss;
    }

    /**
     * Writes this rank's measurements to {@code <report>.rank<r>}, one line each.
     *
     * @param lines the measurements
     * @throws IOException if the file cannot be written
     */
    public void write(List<String> lines) throws IOException {
        Files.write(Path.of(report + ".rank" + env().getRank()), lines, StandardCharsets.UTF_8);
    }
}
