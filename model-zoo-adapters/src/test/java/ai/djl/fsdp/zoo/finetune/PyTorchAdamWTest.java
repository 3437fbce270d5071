package ai.djl.fsdp.zoo.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.optim.Adam;
import ai.djl.fsdp.optim.ParameterGroups;
import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.TrainerOptions;
import ai.djl.fsdp.trainer.WrapPolicy;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.hf.CheckpointShardSource;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.fsdp.zoo.sharded.CausalLmLoss;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.tracker.Tracker;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * A small GPT-2 trained 10 steps with AdamW (learning rate 1e-3, weight decay 0.1 on all but biases
 * and normalization weights, clipping at 1.0) and the loss of each step divided by the target
 * tokens of the whole step, against the losses PyTorch computed for the same weights and batches
 * ({@code pytorch-adamw/reference.py} beside this test's resources wrote the weights, the batches
 * and the numbers below). Each step's rows have different numbers of target tokens (right padding,
 * masked prompts), so on 2 ranks with 2 accumulated micro-batches each rank and each micro-batch
 * sees a different count: only the global token mean gives the 1-rank numbers.
 */
class PyTorchAdamWTest {

    /** {@code torch.optim.AdamW} on the global batch of each step (PyTorch 1.13, float32). */
    private static final double[] PYTORCH_LOSSES = {
        4.8492608070373535,
        5.071839809417725,
        5.184410572052002,
        5.095618724822998,
        5.099604606628418,
        5.046891689300537,
        4.905891418457031,
        5.111415863037109,
        4.991422176361084,
        4.920093059539795
    };

    private static final double TOLERANCE = 1e-6;
    private static final String PREFIX = "LOSSES ";

    @Test
    void oneRankTrainsAsPyTorch() {
        double[] losses;
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            losses = train(group, 1);
        }
        assertMatchesPyTorch("1 rank", losses);
    }

    @Test
    void twoRanksWithAccumulationTrainAsPyTorch() {
        try (RankProcesses job =
                RankProcesses.builder(PyTorchAdamWTest.class)
                        .worldSize(2)
                        .timeout(Duration.ofMinutes(4))
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            double[] losses = new double[PYTORCH_LOSSES.length];
            for (int rank = 0; rank < 2; rank++) {
                double[] share = parse(results.rank(rank).output());
                for (int step = 0; step < losses.length; step++) {
                    losses[step] += share[step];
                }
            }
            assertMatchesPyTorch("2 ranks, 2 micro-batches each", losses);
            // And the same training as 1 rank on the whole global batch, step by step.
            double[] oneRank;
            try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
                oneRank = train(group, 1);
            }
            for (int step = 0; step < losses.length; step++) {
                double error = Math.abs(losses[step] - oneRank[step]) / oneRank[step];
                assertTrue(
                        error <= TOLERANCE,
                        "step " + step + ": 2 ranks " + losses[step] + ", 1 rank " + oneRank[step]);
            }
        }
    }

    /** A rank of the 2-rank run: prints its micro-batches' shares of each step's loss. */
    public static void main(String[] args) {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment())) {
            double[] shares = train(group, 2);
            System.out.println(
                    PREFIX
                            + Arrays.stream(shares)
                                    .mapToObj(v -> Double.toString(v))
                                    .collect(Collectors.joining(" ")));
        }
    }

    private static void assertMatchesPyTorch(String what, double[] losses) {
        assertEquals(PYTORCH_LOSSES.length, losses.length);
        double worst = 0;
        for (int step = 0; step < losses.length; step++) {
            worst =
                    Math.max(
                            worst,
                            Math.abs(losses[step] - PYTORCH_LOSSES[step]) / PYTORCH_LOSSES[step]);
        }
        System.out.printf(Locale.ROOT, "%s: largest relative error %.3g%n", what, worst);
        for (int step = 0; step < losses.length; step++) {
            double error = Math.abs(losses[step] - PYTORCH_LOSSES[step]) / PYTORCH_LOSSES[step];
            assertTrue(
                    error <= TOLERANCE,
                    String.format(
                            Locale.ROOT,
                            "%s: step %d loss %.9f, PyTorch %.9f, relative error %.3g",
                            what,
                            step,
                            losses[step],
                            PYTORCH_LOSSES[step],
                            error));
        }
    }

    private static double[] parse(String output) {
        for (String line : output.split("\n")) {
            if (line.startsWith(PREFIX)) {
                return Arrays.stream(line.substring(PREFIX.length()).trim().split(" "))
                        .mapToDouble(Double::parseDouble)
                        .toArray();
            }
        }
        throw new AssertionError("no losses in the rank's output:\n" + output);
    }

    /**
     * Trains this rank's share of every step (its rows of each of {@code accumulation}
     * micro-batches) and returns, per step, the sum of its micro-batches' losses: its share of the
     * step's global token mean.
     */
    private static double[] train(ProcessGroup group, int accumulation) {
        try {
            return trainOrThrow(group, accumulation);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static double[] trainOrThrow(ProcessGroup group, int accumulation) throws IOException {
        Path directory = resources();
        JsonArray steps = batches(directory);
        double[] shares = new double[steps.size()];
        try (Model model = Model.newInstance("gpt2-reference", Device.cpu());
                NDManager manager = NDManager.newBaseManager(Device.cpu())) {
            CausalLM lm = Models.forCheckpoint(ModelFamilies.read(directory));
            model.setBlock(lm);
            CausalLmLoss loss = new CausalLmLoss();
            DefaultTrainingConfig config =
                    new DefaultTrainingConfig(loss)
                            .optOptimizer(
                                    Adam.adamWBuilder()
                                            .optLearningRateTracker(Tracker.fixed(1e-3f))
                                            .optWeightDecays(0.1f)
                                            .build())
                            .optDevices(new Device[] {Device.cpu()});
            FsdpTrainer trainer;
            try (CheckpointShardSource source = HfCheckpoint.shardSource(lm, directory)) {
                TrainerOptions options =
                        TrainerOptions.builder()
                                .optInitialValues(source)
                                .optGradientAccumulationSteps(accumulation)
                                .optMaxGradNorm(1f)
                                .optParameterGroups(
                                        ParameterGroups.builder()
                                                .optNoDecay(ParameterGroups.biasesAndNorms())
                                                .build())
                                .build();
                FsdpConfig fsdp =
                        FsdpConfig.builder()
                                .optWrapPolicy(
                                        WrapPolicy.byLayerClass(
                                                lm.decoderLayerClass().getSimpleName()))
                                .build();
                trainer = FullyShardedDataParallel.newTrainer(model, config, group, fsdp, options);
                trainer.initialize(new Shape(1, 1));
            }
            try (trainer) {
                int rows = steps.get(0).getAsJsonObject().getAsJsonArray("ids").size();
                int microRows = rows / (group.getSize() * accumulation);
                for (int step = 0; step < steps.size(); step++) {
                    long[][] ids = rows(steps.get(step), "ids");
                    long[][] labels = rows(steps.get(step), "labels");
                    long targets = 0;
                    for (int micro = 0; micro < accumulation; micro++) {
                        int first = (micro * group.getSize() + group.getRank()) * microRows;
                        for (int r = first; r < first + microRows; r++) {
                            targets += Arrays.stream(labels[r]).filter(v -> v >= 0).count();
                        }
                    }
                    loss.setStepTokens(trainer.countStepItems(targets));
                    for (int micro = 0; micro < accumulation; micro++) {
                        int first = (micro * group.getSize() + group.getRank()) * microRows;
                        try (NDManager scope = manager.newSubManager();
                                GradientCollector collector = trainer.newGradientCollector()) {
                            NDList x = new NDList(slice(scope, ids, first, microRows));
                            NDList y = new NDList(slice(scope, labels, first, microRows));
                            NDArray value = loss.evaluate(y, trainer.forward(x));
                            collector.backward(value);
                            shares[step] += value.getFloat();
                        }
                        trainer.step();
                    }
                }
            }
        }
        return shares;
    }

    private static NDArray slice(NDManager manager, long[][] rows, int first, int count) {
        int length = rows[0].length;
        long[] flat = new long[count * length];
        for (int r = 0; r < count; r++) {
            System.arraycopy(rows[first + r], 0, flat, r * length, length);
        }
        return manager.create(flat, new Shape(count, length));
    }

    private static long[][] rows(JsonElement step, String key) {
        JsonArray array = step.getAsJsonObject().getAsJsonArray(key);
        long[][] rows = new long[array.size()][];
        for (int r = 0; r < rows.length; r++) {
            JsonArray row = array.get(r).getAsJsonArray();
            rows[r] = new long[row.size()];
            for (int t = 0; t < row.size(); t++) {
                rows[r][t] = row.get(t).getAsLong();
            }
        }
        return rows;
    }

    private static JsonArray batches(Path directory) throws IOException {
        return JsonParser.parseString(Files.readString(directory.resolve("batches.json")))
                .getAsJsonArray();
    }

    private static Path resources() {
        try {
            return Path.of(PyTorchAdamWTest.class.getResource("pytorch-adamw/config.json").toURI())
                    .getParent();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }
}
