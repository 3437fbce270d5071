package ai.djl.fsdp.checkpoint;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.MixedPrecision;
import ai.djl.fsdp.trainer.WrapPolicy;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.Initializer;
import ai.djl.training.initializer.NormalInitializer;
import ai.djl.training.loss.Loss;
import ai.djl.util.PairList;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * One rank of {@link PiecewiseStartTest}'s job: starts a fresh {@link Table} under FSDP in bfloat16
 * (its frozen table drawn in pieces, {@link PiecewiseDraws}) and writes the table's values,
 * gathered back when the trainer closes, widened to float32, to {@code <dir>/rank<r>}.
 */
public final class PiecewiseStartRankMain {

    static final int SEED = 23;
    static final float SIGMA = 0.02f;

    /** Rows of the table: more than {@link ShardLoader#PIECE} values of {@link #COLUMNS}. */
    static final long ROWS = ShardLoader.PIECE / 512 + 5;

    static final long COLUMNS = 512;

    private PiecewiseStartRankMain() {}

    /**
     * Runs one rank.
     *
     * @param args the directory to write in
     * @throws IOException if writing fails
     */
    public static void main(String[] args) throws IOException {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment())) {
            float[] values = start(group);
            Path file = Path.of(args[0]).resolve("rank" + group.getRank());
            try (DataOutputStream out = new DataOutputStream(Files.newOutputStream(file))) {
                out.writeInt(values.length);
                for (float value : values) {
                    out.writeFloat(value);
                }
            }
        }
    }

    /** Starts the model sharded over {@code group}; returns its table's values. */
    static float[] start(ProcessGroup group) {
        try (Model model = Model.newInstance("table", group.getDevice())) {
            Table table = new Table();
            model.setBlock(table);
            DefaultTrainingConfig config =
                    new DefaultTrainingConfig(Loss.l2Loss())
                            .optInitializer(new NormalInitializer(SIGMA), Parameter.Type.WEIGHT)
                            .optDevices(new Device[] {group.getDevice()});
            FsdpConfig fsdp =
                    FsdpConfig.builder()
                            .optWrapPolicy(WrapPolicy.byLayerClass("Rows"))
                            .optMixedPrecision(MixedPrecision.BF16)
                            .build();
            Engine.getInstance().setRandomSeed(SEED);
            try (FsdpTrainer trainer =
                    FullyShardedDataParallel.newTrainer(model, config, group, fsdp)) {
                trainer.initialize(new Shape(1, COLUMNS));
            }
            try (NDArray widened = Precision.FLOAT32.cast(table.table.getArray())) {
                return widened.toFloatArray();
            }
        }
    }

    /** A unit holding a frozen table of {@link #ROWS} x {@link #COLUMNS} values, and a bias. */
    static final class Table extends AbstractBlock {

        /** The frozen table, the unit's parameter. */
        final Parameter table;

        private final Parameter bias;

        // Not final: FSDP puts a stand-in in the unit's place while it initializes the model.
        private Block rows;

        Table() {
            Rows unit = new Rows();
            table = unit.table;
            rows = addChildBlock("rows", unit);
            bias =
                    addParameter(
                            Parameter.builder()
                                    .setName("bias")
                                    .setType(Parameter.Type.BIAS)
                                    .optShape(new Shape(COLUMNS))
                                    .optInitializer(Initializer.ZEROS)
                                    .build());
        }

        @Override
        protected NDList forwardInternal(
                ParameterStore store,
                NDList inputs,
                boolean training,
                PairList<String, Object> params) {
            NDArray x = rows.forward(store, inputs, training).singletonOrThrow();
            return new NDList(x.add(store.getValue(bias, x.getDevice(), training)));
        }

        @Override
        public void initializeChildBlocks(NDManager manager, DataType dataType, Shape... shapes) {
            rows.initialize(manager, dataType, shapes);
        }

        @Override
        public Shape[] getOutputShapes(Shape[] inputShapes) {
            return inputShapes;
        }
    }

    /** The unit: a frozen table the input is multiplied by (rows of width {@link #COLUMNS}). */
    static final class Rows extends AbstractBlock {

        final Parameter table;

        Rows() {
            table =
                    addParameter(
                            Parameter.builder()
                                    .setName("table")
                                    .setType(Parameter.Type.WEIGHT)
                                    .optShape(new Shape(ROWS, COLUMNS))
                                    .optRequiresGrad(false)
                                    .build());
        }

        @Override
        protected NDList forwardInternal(
                ParameterStore store,
                NDList inputs,
                boolean training,
                PairList<String, Object> params) {
            NDArray x = inputs.singletonOrThrow();
            NDArray rowsOf = store.getValue(table, x.getDevice(), training);
            return new NDList(x.matMul(rowsOf.transpose()).matMul(rowsOf));
        }

        @Override
        public Shape[] getOutputShapes(Shape[] inputShapes) {
            return inputShapes;
        }
    }
}
