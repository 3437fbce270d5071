package ai.djl.fsdp.trainer;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;
import java.util.ArrayList;
import java.util.List;

/**
 * The equivalence tests' model: three {@link MixerBlock} units and computation outside them, an
 * embedding (one-hot times a matrix) into the first unit, whose output feeds the second and the
 * third unit and the sum of all three with the embedding (so its gradient arrives from two later
 * units and from the root's graph), the third unit called a second time on the second's output (a
 * unit called twice a pass, its gradient the sum of two backward calls), and a head whose weight is
 * the embedding's, plus a bias.
 */
final class TinyLm extends AbstractBlock {

    static final int VOCAB = 11;
    static final int WIDTH = 6;

    private final Parameter embedding;
    private final Parameter headBias;
    private final List<Block> layers = new ArrayList<>();

    /**
     * Creates the model.
     *
     * @param dropoutRate the units' dropout rate, 0 for none
     */
    TinyLm(float dropoutRate) {
        embedding =
                addParameter(
                        Parameter.builder()
                                .setName("embedding")
                                .setType(Parameter.Type.WEIGHT)
                                .optShape(new Shape(VOCAB, WIDTH))
                                .build());
        headBias =
                addParameter(
                        Parameter.builder()
                                .setName("headBias")
                                .setType(Parameter.Type.BIAS)
                                .optShape(new Shape(VOCAB))
                                .build());
        for (int i = 0; i < 3; i++) {
            layers.add(addChildBlock("mixer" + i, new MixerBlock(WIDTH, dropoutRate)));
        }
    }

    /** Freezes the second unit's layer norm, so that unit mixes frozen and trainable weights. */
    void freezeMiddleNorm() {
        ((MixerBlock) layers.get(1)).freezeNorm();
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore parameterStore,
            NDList inputs,
            boolean training,
            PairList<String, Object> params) {
        NDArray tokens = inputs.head();
        NDArray weight = parameterStore.getValue(embedding, tokens.getDevice(), training);
        NDArray embedded = tokens.oneHot(VOCAB).matMul(weight);
        NDList first = layers.get(0).forward(parameterStore, new NDList(embedded), training);
        NDList second = layers.get(1).forward(parameterStore, first, training);
        NDList third = layers.get(2).forward(parameterStore, new NDList(first.head()), training);
        NDList again = layers.get(2).forward(parameterStore, new NDList(second.head()), training);
        NDArray hidden =
                second.head().add(third.head()).add(again.head()).add(first.head()).add(embedded);
        NDArray bias = parameterStore.getValue(headBias, tokens.getDevice(), training);
        return new NDList(hidden.matMul(weight.transpose()).add(bias));
    }

    @Override
    protected void initializeChildBlocks(
            NDManager manager, DataType dataType, Shape... inputShapes) {
        Shape hidden = inputShapes[0].add(WIDTH);
        for (Block layer : layers) {
            layer.initialize(manager, dataType, hidden);
        }
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        return new Shape[] {inputShapes[0].add(VOCAB)};
    }
}
