package ai.djl.fsdp.trainer;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.tensor.op.Autograd;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.ParameterStore;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.util.PairList;
import java.util.ArrayList;
import java.util.List;

/**
 * One rank of {@link ReleaseAfterBackwardTest}: trains a chain of recomputed units, each a frozen
 * weight (as a LoRA base) and a trainable bias, after a frozen unit called twice on the data (as a
 * token table under LoRA is, once by each of T5's stacks), under FULL_SHARD on real ranks, and
 * prints how many recomputes it saw, how many arrays of an earlier recompute were still alive when
 * the next one started, and how often the frozen unit ran in all and in backward, as {@code
 * recomputes=R alive=A frozenCalls=C frozenRecomputes=F}.
 */
public final class ReleaseAfterBackwardRankMain {

    static final int UNITS = 3;
    static final int STEPS = 2;
    private static final int WIDTH = 8;
    private static final int BATCH = 4;

    private ReleaseAfterBackwardRankMain() {}

    public static void main(String[] args) throws Exception {
        Probe probe = new Probe();
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment());
                Model model = Model.newInstance("probe-chain", group.getDevice())) {
            model.setBlock(new Chain(probe));
            DefaultTrainingConfig config =
                    new DefaultTrainingConfig(Loss.l2Loss())
                            .optOptimizer(
                                    Optimizer.sgd()
                                            .setLearningRateTracker(Tracker.fixed(0.1f))
                                            .build())
                            .optDevices(new Device[] {group.getDevice()});
            FsdpConfig fsdp =
                    FsdpConfig.builder()
                            .optShardingStrategy(ShardingStrategy.FULL_SHARD)
                            .optWrapPolicy(WrapPolicy.byLayerClass("FrozenUnit", "ProbeUnit"))
                            .optActivationCheckpointing(ActivationCheckpointing.everyUnit())
                            .build();
            try (FsdpTrainer trainer =
                    FullyShardedDataParallel.newTrainer(
                            model, config, group, fsdp, TrainerOptions.builder().build())) {
                trainer.initialize(new Shape(BATCH, WIDTH));
                for (int step = 0; step < STEPS; step++) {
                    try (NDManager scope = trainer.getManager().newSubManager();
                            GradientCollector collector = trainer.newGradientCollector()) {
                        NDArray x = scope.randomUniform(-1, 1, new Shape(BATCH, WIDTH));
                        NDList out = trainer.forward(new NDList(x));
                        collector.backward(out.head().square().mean());
                    }
                    trainer.step();
                    probe.endStep();
                }
            }
        }
        System.out.println(
                "recomputes="
                        + probe.recomputes
                        + " alive="
                        + probe.alive
                        + " frozenCalls="
                        + probe.frozenCalls
                        + " frozenRecomputes="
                        + probe.frozenRecomputes);
    }

    /**
     * What the units saw in backward: the arrays each recompute made (its parameter's view into the
     * gathered buffer and its output, in its graph), checked when a later recompute starts.
     */
    private static final class Probe {

        private final List<NDArray> earlier = new ArrayList<>();
        private int recomputes;
        private int alive;
        private int frozenCalls;
        private int frozenRecomputes;

        void recomputed(NDArray... arrays) {
            recomputes++;
            for (NDArray array : earlier) {
                if (!array.isReleased()) {
                    alive++;
                }
            }
            earlier.addAll(List.of(arrays));
        }

        void endStep() {
            earlier.clear();
        }
    }

    /** A frozen {@code [WIDTH, WIDTH]} weight, as a LoRA base's. */
    private static Parameter frozenWeight() {
        return Parameter.builder()
                .setName("weight")
                .setType(Parameter.Type.WEIGHT)
                .optShape(new Shape(WIDTH, WIDTH))
                .optRequiresGrad(false)
                .build();
    }

    /** The model: the frozen unit's two calls summed, then {@link #UNITS} units in a row. */
    private static final class Chain extends AbstractBlock {

        private Block frozen; // not final: FSDP puts its stand-in here
        private final List<Block> units = new ArrayList<>();

        Chain(Probe probe) {
            frozen = addChildBlock("frozen", new FrozenUnit(probe));
            for (int i = 0; i < UNITS; i++) {
                units.add(addChildBlock("unit" + i, new ProbeUnit(probe)));
            }
        }

        @Override
        protected NDList forwardInternal(
                ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> p) {
            NDArray first = frozen.forward(ps, inputs, training).head();
            NDArray second = frozen.forward(ps, inputs, training).head();
            NDList x = new NDList(first.add(second));
            for (Block unit : units) {
                x = unit.forward(ps, x, training);
            }
            return x;
        }

        @Override
        protected void initializeChildBlocks(
                NDManager manager, DataType dataType, Shape... inputShapes) {
            frozen.initialize(manager, dataType, inputShapes);
            units.forEach(unit -> unit.initialize(manager, dataType, inputShapes));
        }

        @Override
        public Shape[] getOutputShapes(Shape[] inputShapes) {
            return inputShapes;
        }
    }

    /**
     * {@code x W}, {@code W} frozen, on the data: no gradient can reach it, so backward never runs
     * (or gathers) it again. Reports each call, and each that builds a graph.
     */
    private static final class FrozenUnit extends AbstractBlock {

        private final Probe probe;
        private final Parameter weight;

        FrozenUnit(Probe probe) {
            this.probe = probe;
            weight = addParameter(frozenWeight());
        }

        @Override
        protected NDList forwardInternal(
                ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> p) {
            probe.frozenCalls++;
            if (Autograd.isGradMode()) {
                probe.frozenRecomputes++;
            }
            NDArray x = inputs.head();
            return new NDList(x.matMul(ps.getValue(weight, x.getDevice(), training)));
        }

        @Override
        public Shape[] getOutputShapes(Shape[] inputShapes) {
            return inputShapes;
        }
    }

    /** {@code tanh(x W + b)}, {@code W} frozen; reports each call that builds a graph. */
    private static final class ProbeUnit extends AbstractBlock {

        private final Probe probe;
        private final Parameter weight;
        private final Parameter bias;

        ProbeUnit(Probe probe) {
            this.probe = probe;
            weight = addParameter(frozenWeight());
            bias =
                    addParameter(
                            Parameter.builder()
                                    .setName("bias")
                                    .setType(Parameter.Type.BIAS)
                                    .optShape(new Shape(WIDTH))
                                    .build());
        }

        @Override
        protected NDList forwardInternal(
                ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> p) {
            NDArray x = inputs.head();
            NDArray w = ps.getValue(weight, x.getDevice(), training);
            NDArray y = x.matMul(w).add(ps.getValue(bias, x.getDevice(), training)).tanh();
            // A recomputed unit runs with a graph only in backward.
            if (Autograd.isGradMode()) {
                probe.recomputed(w, y);
            }
            return new NDList(y);
        }

        @Override
        public Shape[] getOutputShapes(Shape[] inputShapes) {
            return inputShapes;
        }
    }
}
