package ai.djl.fsdp.bench.train;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.ndarray.types.SparseFormat;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.nn.norm.LayerNorm;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

import java.util.ArrayList;
import java.util.List;

/**
 * A GPT-2-shaped language model for the training benchmark: token and position embeddings, {@link
 * GptBlock} layers, a final layer norm and a head tied to the token embedding. Input {@code (batch,
 * time)} token ids; output {@code (batch, time, vocab)} logits.
 */
final class GptModel extends AbstractBlock {

    private final int vocab;
    private final Parameter tokenEmbedding;
    private final Parameter positionEmbedding;
    private final List<Block> layers = new ArrayList<>();
    private Block finalNorm;

    GptModel(int layerCount, int width, int heads, int vocab, int sequence) {
        this.vocab = vocab;
        tokenEmbedding =
                addParameter(
                        Parameter.builder()
                                .setName("wte")
                                .setType(Parameter.Type.WEIGHT)
                                .optShape(new Shape(vocab, width))
                                .build());
        positionEmbedding =
                addParameter(
                        Parameter.builder()
                                .setName("wpe")
                                .setType(Parameter.Type.WEIGHT)
                                .optShape(new Shape(sequence, width))
                                .build());
        for (int i = 0; i < layerCount; i++) {
            layers.add(addChildBlock("h" + i, new GptBlock(width, heads)));
        }
        finalNorm = addChildBlock("ln_f", LayerNorm.builder().axis(2).build());
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray tokens = inputs.head();
        long time = tokens.getShape().get(1);
        NDArray wte = ps.getValue(tokenEmbedding, tokens.getDevice(), training);
        NDArray wpe = ps.getValue(positionEmbedding, tokens.getDevice(), training);
        NDArray embedded =
                tokens.getNDArrayInternal().embedding(tokens, wte, SparseFormat.DENSE).head();
        NDArray x = embedded.add(wpe.get("0:{}", time));
        NDList hidden = new NDList(x);
        for (Block layer : layers) {
            hidden = layer.forward(ps, hidden, training);
        }
        NDArray normed = finalNorm.forward(ps, hidden, training).head();
        return new NDList(normed.matMul(wte.transpose()));
    }

    @Override
    protected void initializeChildBlocks(
            NDManager manager, DataType dataType, Shape... inputShapes) {
        Shape hidden = inputShapes[0].add(tokenEmbedding.getShape().get(1));
        for (Block layer : layers) {
            layer.initialize(manager, dataType, hidden);
        }
        finalNorm.initialize(manager, dataType, hidden);
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        return new Shape[] {inputShapes[0].add(vocab)};
    }
}
