package ai.djl.fsdp.zoo.t5;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.MixedPrecision;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.trainer.TrainerOptions;
import ai.djl.fsdp.zoo.ReferenceChecks;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.generate.GreedyDecoding;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.fsdp.zoo.sharded.CausalLmLoss;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Parameter;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.ParameterStore;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * T5 trained under FSDP {@code FULL_SHARD}, each {@link T5Block} of both stacks a unit, on however
 * many ranks the group has: every rank builds the same seeded model, trains 3 AdamW steps on its
 * share of each global batch (4 padded sources with -100 labels, the loss the step's global token
 * mean), and rank 0 writes the per-step losses summed over the ranks and the logits of a fixed
 * batch before and after training, for {@link T5ShardedTest} to compare across world sizes. Four
 * scenarios: full fine-tuning and LoRA with T5's default targets, each with CPU offload off and on.
 */
final class T5ShardedChecks {

    static final List<String> SCENARIOS = List.of("full", "full-offload", "lora", "lora-offload");

    static final int STEPS = 3;
    private static final int GLOBAL_BATCH = 4;
    private static final int SOURCE = 10;
    private static final int TARGET = 6;
    private static final int SEED = 5;

    private T5ShardedChecks() {}

    /**
     * Runs the scenarios on one rank of a job described by the environment.
     *
     * @param args the directory to write the results to
     * @throws IOException if writing fails
     */
    public static void main(String[] args) throws IOException {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment())) {
            runAll(group, Path.of(args[0]));
        }
        System.out.println("checks passed");
    }

    /** Runs every scenario, rank 0 writing {@code <scenario>.ndlist} into {@code directory}. */
    static void runAll(ProcessGroup group, Path directory) throws IOException {
        sgdStepMatchesThePlainModel(group);
        shardedGenerationMatchesThePlainModel(group);
        for (String scenario : SCENARIOS) {
            NDList result = run(scenario, group);
            if (group.getRank() == 0) {
                Files.write(directory.resolve(scenario + ".ndlist"), result.encode());
            }
            result.close();
        }
    }

    /** Returns the model every scenario starts from. */
    static T5Config config() {
        return T5Config.of(40, 32, 4, 48, 2, 3, "gated-gelu");
    }

    /** Returns {@code NDList(losses [STEPS], logits before, logits after)}. */
    private static NDList run(String scenario, ProcessGroup group) {
        NDManager results = TestModels.newManager();
        try (Model model = Model.newInstance(scenario, Device.cpu())) {
            Engine.getEngine("PyTorch").setRandomSeed(SEED);
            T5ForConditionalGeneration t5 =
                    (T5ForConditionalGeneration)
                            Models.createPretrained(config(), model.getNDManager());
            NDList probe = batch(results, t5, -1, 0, GLOBAL_BATCH);
            NDArray before =
                    t5.forward(
                            new ParameterStore(results, false),
                            probe.get(0),
                            probe.get(1),
                            probe.get(2),
                            false);
            if (scenario.startsWith("lora")) {
                List<String> adapted =
                        Lora.apply(
                                t5,
                                LoraConfig.builder()
                                        .setTargetModules(t5.defaultLoraTargets())
                                        .optRank(4)
                                        .optAlpha(8)
                                        .build());
                // q and v of the 2 encoder self-attentions and of the 3 decoder blocks' two each.
                if (adapted.size() != 2 * (2 + 3 * 2)
                        || !adapted.stream().allMatch(p -> p.endsWith(".q") || p.endsWith(".v"))) {
                    throw new AssertionError("LoRA's default T5 targets adapted " + adapted);
                }
            }
            model.setBlock(t5);
            CausalLmLoss loss = new CausalLmLoss();
            float[] losses = new float[STEPS];
            try (FsdpTrainer trainer =
                    newTrainer(
                            model,
                            loss,
                            group,
                            adamW(),
                            scenario.endsWith("offload"),
                            MixedPrecision.FP32)) {
                int share = GLOBAL_BATCH / group.getSize();
                int from = group.getRank() * share;
                for (int step = 0; step < STEPS; step++) {
                    try (NDManager scope = results.newSubManager()) {
                        losses[step] =
                                train(trainer, loss, batch(scope, t5, step, from, from + share));
                    }
                }
                for (int step = 0; step < STEPS; step++) {
                    losses[step] = sumOverRanks(group, results, losses[step]);
                }
                NDArray after = trainer.evaluate(probe.subNDList(0, 3)).head();
                after.attach(results);
                return new NDList(results.create(losses), before, after);
            }
        }
    }

    private static float sumOverRanks(ProcessGroup group, NDManager manager, float value) {
        NDArray sum = manager.create(new float[] {value});
        group.allReduce(sum, ReduceOp.SUM);
        return sum.getFloat(0);
    }

    /**
     * One SGD step under FSDP on the group, each rank on its share of the batch, gives the logits
     * of one step of plain SGD on the whole batch in this process (the gradients through every
     * unit, the first block's shared position bias included): a check of the units' gradients
     * against DJL's own autograd on the unsharded model. In bfloat16 mixed precision the forward
     * and the step stay within bfloat16's bounds of it.
     */
    private static void sgdStepMatchesThePlainModel(ProcessGroup group) {
        float rate = 0.5f;
        try (NDManager manager = TestModels.newManager()) {
            Engine.getEngine("PyTorch").setRandomSeed(SEED);
            T5ForConditionalGeneration plain =
                    (T5ForConditionalGeneration) Models.createPretrained(config(), manager);
            ParameterStore ps = new ParameterStore(manager, false);
            NDList probe = batch(manager, plain, -1, 0, GLOBAL_BATCH);
            NDArray initial = plain.forward(ps, probe.get(0), probe.get(1), probe.get(2), false);
            NDList whole = batch(manager, plain, 0, 0, GLOBAL_BATCH);
            try (GradientCollector collector = Engine.getInstance().newGradientCollector()) {
                NDArray logits = plain.forward(ps, whole.get(0), whole.get(1), whole.get(2), true);
                collector.backward(
                        new CausalLmLoss().evaluate(new NDList(whole.get(3)), new NDList(logits)));
            }
            for (Parameter parameter : StateDict.parameters(plain).values()) {
                NDArray array = parameter.getArray();
                array.subi(array.getGradient().mul(rate));
            }
            NDArray expected = plain.forward(ps, probe.get(0), probe.get(1), probe.get(2), false);
            // bfloat16 keeps 8 significant bits: its forward stays within 2e-2 (measured 9.0e-3),
            // and a step of rate 0.5 carries the gradient's error, 5e-2 as the mixed-precision
            // checks bound an update's, into the logits (measured 4.8e-2).
            sgdStep(
                    group,
                    rate,
                    manager,
                    probe,
                    MixedPrecision.FP32,
                    initial,
                    expected,
                    2e-5,
                    2e-5);
            sgdStep(
                    group,
                    rate,
                    manager,
                    probe,
                    MixedPrecision.BF16,
                    initial,
                    expected,
                    2e-2,
                    1e-1);
        }
    }

    /** Checks the FSDP model's logits on the probe before and after one SGD step. */
    private static void sgdStep(
            ProcessGroup group,
            float rate,
            NDManager manager,
            NDList probe,
            MixedPrecision precision,
            NDArray initial,
            NDArray expected,
            double forwardBound,
            double stepBound) {
        try (Model model = Model.newInstance("sgd", Device.cpu())) {
            Engine.getEngine("PyTorch").setRandomSeed(SEED);
            T5ForConditionalGeneration t5 =
                    (T5ForConditionalGeneration)
                            Models.createPretrained(config(), model.getNDManager());
            model.setBlock(t5);
            CausalLmLoss loss = new CausalLmLoss();
            Optimizer sgd = Optimizer.sgd().setLearningRateTracker(Tracker.fixed(rate)).build();
            try (FsdpTrainer trainer = newTrainer(model, loss, group, sgd, false, precision)) {
                String what = "FSDP in " + precision + " against the plain model";
                double forward =
                        ReferenceChecks.relativeDifference(
                                what + ", forward",
                                trainer.evaluate(probe.subNDList(0, 3)).head(),
                                initial,
                                forwardBound);
                int share = GLOBAL_BATCH / group.getSize();
                int from = group.getRank() * share;
                train(trainer, loss, batch(manager, t5, 0, from, from + share));
                double step =
                        ReferenceChecks.relativeDifference(
                                what + ", one SGD step",
                                trainer.evaluate(probe.subNDList(0, 3)).head(),
                                expected,
                                stepBound);
                System.out.printf(
                        Locale.ROOT,
                        "%s: forward %.3g, after one SGD step %.3g relative%n",
                        what,
                        forward,
                        step);
            }
        }
    }

    /**
     * Greedy generation with the model sharded over the group, each rank on its own rows, gives the
     * tokens that generation with the whole model in this process gives for those rows.
     */
    private static void shardedGenerationMatchesThePlainModel(ProcessGroup group) {
        try (NDManager manager = TestModels.newManager();
                Model model = Model.newInstance("generate", Device.cpu())) {
            Engine.getEngine("PyTorch").setRandomSeed(SEED);
            T5ForConditionalGeneration plain =
                    (T5ForConditionalGeneration) Models.createPretrained(config(), manager);
            int share = GLOBAL_BATCH / group.getSize();
            int from = group.getRank() * share;
            NDList rows = batch(manager, plain, -1, from, from + share);
            List<long[]> expected =
                    GreedyDecoding.generate(
                            plain, new ParameterStore(manager, false), rows.get(0), rows.get(1), 6);
            Engine.getEngine("PyTorch").setRandomSeed(SEED);
            T5ForConditionalGeneration t5 =
                    (T5ForConditionalGeneration)
                            Models.createPretrained(config(), model.getNDManager());
            model.setBlock(t5);
            try (FsdpTrainer trainer =
                    newTrainer(
                            model,
                            new CausalLmLoss(),
                            group,
                            adamW(),
                            false,
                            MixedPrecision.FP32)) {
                List<long[]> actual =
                        GreedyDecoding.generate(
                                trainer, t5.getConfig(), rows.get(0), rows.get(1), 6);
                for (int row = 0; row < share; row++) {
                    System.out.println(
                            "generated row "
                                    + (from + row)
                                    + ": "
                                    + Arrays.toString(actual.get(row)));
                    if (!Arrays.equals(expected.get(row), actual.get(row))) {
                        throw new AssertionError(
                                "sharded generation of row "
                                        + (from + row)
                                        + " gave "
                                        + Arrays.toString(actual.get(row))
                                        + ", the whole model "
                                        + Arrays.toString(expected.get(row)));
                    }
                }
            }
        }
    }

    /** Trains one step on this rank's batch, the loss the step's global token mean. */
    private static float train(FsdpTrainer trainer, CausalLmLoss loss, NDList batch) {
        NDArray labels = batch.get(3);
        long tokens = labels.neq(CausalLmLoss.IGNORE).sum().getLong();
        loss.setStepTokens(trainer.countStepItems(tokens));
        float value;
        try (GradientCollector collector = trainer.newGradientCollector()) {
            NDList outputs = trainer.forward(batch.subNDList(0, 3));
            NDArray result = loss.evaluate(new NDList(labels), outputs);
            value = result.getFloat();
            collector.backward(result);
        }
        trainer.step();
        return value;
    }

    private static Optimizer adamW() {
        return Optimizer.adamW().optLearningRateTracker(Tracker.fixed(1e-2f)).build();
    }

    private static FsdpTrainer newTrainer(
            Model model,
            CausalLmLoss loss,
            ProcessGroup group,
            Optimizer optimizer,
            boolean offload,
            MixedPrecision precision) {
        DefaultTrainingConfig config =
                new DefaultTrainingConfig(loss)
                        .optOptimizer(optimizer)
                        .optDevices(new Device[] {Device.cpu()});
        FsdpConfig fsdp =
                FsdpConfig.builder()
                        .optShardingStrategy(ShardingStrategy.FULL_SHARD)
                        .optWrapPolicy(
                                ((T5ForConditionalGeneration) model.getBlock()).defaultWrapPolicy())
                        .optCpuOffload(offload)
                        .optMixedPrecision(precision)
                        .build();
        return FullyShardedDataParallel.newTrainer(
                model, config, group, fsdp, TrainerOptions.builder().build());
    }

    /**
     * Returns rows {@code [from, to)} of a global batch: {@code NDList(inputIds, attentionMask,
     * decoderInputIds, labels)}, the odd rows' sources padded after 7 tokens and their last 2
     * labels ignored. Step -1 is the probe batch.
     */
    static NDList batch(
            NDManager manager, T5ForConditionalGeneration t5, int step, int from, int to) {
        Random random = new Random(1000 + step);
        int vocab = t5.getConfig().vocabSize();
        long[] ids = new long[GLOBAL_BATCH * SOURCE];
        long[] mask = new long[ids.length];
        long[] labels = new long[GLOBAL_BATCH * TARGET];
        for (int row = 0; row < GLOBAL_BATCH; row++) {
            for (int t = 0; t < SOURCE; t++) {
                boolean padding = row % 2 == 1 && t >= 7;
                ids[row * SOURCE + t] = padding ? 0 : 2 + random.nextInt(vocab - 2);
                mask[row * SOURCE + t] = padding ? 0 : 1;
            }
            for (int t = 0; t < TARGET; t++) {
                boolean ignored = row % 2 == 1 && t >= TARGET - 2;
                labels[row * TARGET + t] =
                        ignored ? CausalLmLoss.IGNORE : 1 + random.nextInt(vocab - 1);
            }
        }
        String rows = from + ":" + to;
        NDArray labelRows = manager.create(labels).reshape(GLOBAL_BATCH, TARGET).get(rows);
        return new NDList(
                manager.create(ids).reshape(GLOBAL_BATCH, SOURCE).get(rows),
                manager.create(mask).reshape(GLOBAL_BATCH, SOURCE).get(rows),
                t5.getConfig().shiftRight(labelRows),
                labelRows);
    }
}
