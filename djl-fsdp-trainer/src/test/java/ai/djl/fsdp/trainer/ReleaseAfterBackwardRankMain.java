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
 * weight (as a LoRA base) and a trainable bias, under FULL_SHARD on real ranks, and prints how many
 * recomputes it saw and how many arrays of an earlier recompute were still alive when the next one
 * started, as {@code recomputes=R alive=A}.
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
                            .optWrapPolicy(WrapPolicy.byLayerClass("ProbeUnit"))
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
        System.out.println("recomputes=" + probe.recomputes + " alive=" + probe.alive);
    }

    /**
     * What the units saw in backward: the arrays each recompute made (its parameter's view into the
     * gathered buffer and its output, in its graph), checked when a later recompute starts.
     */
    private static final class Probe {

        private final List<NDArray> earlier = new ArrayList<>();
        private int recomputes;
        private int alive;

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

    /** The model: {@link #UNITS} units in a row, nothing else. */
    private static final class Chain extends AbstractBlock {

        private final List<Block> units = new ArrayList<>();

        Chain(Probe probe) {
            for (int i = 0; i < UNITS; i++) {
                units.add(addChildBlock("unit" + i, new ProbeUnit(probe)));
            }
        }

        @Override
        protected NDList forwardInternal(
                ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> p) {
            NDList x = inputs;
            for (Block unit : units) {
                x = unit.forward(ps, x, training);
            }
            return x;
        }

        @Override
        protected void initializeChildBlocks(
                NDManager manager, DataType dataType, Shape... inputShapes) {
            units.forEach(unit -> unit.initialize(manager, dataType, inputShapes));
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
            weight =
                    addParameter(
                            Parameter.builder()
                                    .setName("weight")
                                    .setType(Parameter.Type.WEIGHT)
                                    .optShape(new Shape(WIDTH, WIDTH))
                                    .optRequiresGrad(false)
                                    .build());
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
