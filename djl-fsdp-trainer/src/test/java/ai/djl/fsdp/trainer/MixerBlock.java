package ai.djl.fsdp.trainer;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Block;
import ai.djl.nn.core.Linear;
import ai.djl.nn.norm.Dropout;
import ai.djl.nn.norm.LayerNorm;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * A residual layer of the test model, {@code x + tanh(linear(norm(x)))} on {@code (batch, time,
 * width)} arrays: the unit class. (DJL's LayerNorm takes the positive axis: -1 fails to
 * initialize.)
 */
final class MixerBlock extends AbstractBlock {

    private Block norm;
    private Block linear;
    private Block dropout;

    /**
     * Creates the layer.
     *
     * @param width the hidden width
     * @param dropoutRate the dropout rate after the nonlinearity, 0 for none
     */
    MixerBlock(int width, float dropoutRate) {
        norm = addChildBlock("norm", LayerNorm.builder().axis(2).build());
        linear = addChildBlock("linear", Linear.builder().setUnits(width).build());
        dropout =
                dropoutRate > 0
                        ? addChildBlock("dropout", Dropout.builder().optRate(dropoutRate).build())
                        : null;
    }

    void freezeNorm() {
        norm.freezeParameters(true);
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore parameterStore,
            NDList inputs,
            boolean training,
            PairList<String, Object> params) {
        NDArray x = inputs.head();
        NDList normed = norm.forward(parameterStore, inputs, training);
        NDArray mixed = linear.forward(parameterStore, normed, training).head().tanh();
        if (dropout != null) {
            mixed = dropout.forward(parameterStore, new NDList(mixed), training).head();
        }
        return new NDList(x.add(mixed));
    }

    @Override
    protected void initializeChildBlocks(
            NDManager manager, DataType dataType, Shape... inputShapes) {
        norm.initialize(manager, dataType, inputShapes);
        linear.initialize(manager, dataType, inputShapes);
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        return inputShapes;
    }
}
