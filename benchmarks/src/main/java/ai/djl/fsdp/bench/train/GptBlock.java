package ai.djl.fsdp.bench.train;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Activation;
import ai.djl.nn.Block;
import ai.djl.nn.core.Linear;
import ai.djl.nn.norm.LayerNorm;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * A GPT-2 transformer layer, pre-norm: {@code x + proj(attention(ln1(x)))}, then {@code x +
 * mlp(ln2(x))} with a 4x GELU MLP; causal multi-head self-attention on {@code (batch, time, width)}
 * arrays. The benchmark's FSDP unit.
 */
final class GptBlock extends AbstractBlock {

    private final int heads;
    private Block ln1;
    private Block qkv;
    private Block projection;
    private Block ln2;
    private Block expand;
    private Block contract;

    GptBlock(int width, int heads) {
        if (width % heads != 0) {
            throw new IllegalArgumentException(
                    "--width " + width + " must be a multiple of --heads " + heads);
        }
        this.heads = heads;
        ln1 = addChildBlock("ln_1", LayerNorm.builder().axis(2).build());
        qkv = addChildBlock("c_attn", Linear.builder().setUnits(3L * width).build());
        projection = addChildBlock("c_proj", Linear.builder().setUnits(width).build());
        ln2 = addChildBlock("ln_2", LayerNorm.builder().axis(2).build());
        expand = addChildBlock("c_fc", Linear.builder().setUnits(4L * width).build());
        contract = addChildBlock("mlp_c_proj", Linear.builder().setUnits(width).build());
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray x = inputs.head();
        NDArray attended = attention(ps, ln1.forward(ps, inputs, training).head(), training);
        x = x.add(projection.forward(ps, new NDList(attended), training).head());
        NDList normed = ln2.forward(ps, new NDList(x), training);
        NDArray hidden = Activation.gelu(expand.forward(ps, normed, training).head());
        return new NDList(x.add(contract.forward(ps, new NDList(hidden), training).head()));
    }

    private NDArray attention(ParameterStore ps, NDArray x, boolean training) {
        Shape shape = x.getShape();
        long batch = shape.get(0);
        long time = shape.get(1);
        long width = shape.get(2);
        long headWidth = width / heads;
        NDList qkvSplit = qkv.forward(ps, new NDList(x), training).head().split(3, 2);
        NDArray[] qkvHeads = new NDArray[3];
        for (int i = 0; i < 3; i++) {
            qkvHeads[i] =
                    qkvSplit.get(i).reshape(batch, time, heads, headWidth).transpose(0, 2, 1, 3);
        }
        NDArray scores =
                qkvHeads[0].matMul(qkvHeads[1].transpose(0, 1, 3, 2)).div(Math.sqrt(headWidth));
        NDManager manager = x.getManager();
        NDArray future =
                manager.arange(time).reshape(1, time).gt(manager.arange(time).reshape(time, 1));
        NDArray masked = scores.add(future.toType(DataType.FLOAT32, false).mul(-1e9f));
        NDArray context = masked.softmax(-1).matMul(qkvHeads[2]);
        return context.transpose(0, 2, 1, 3).reshape(batch, time, width);
    }

    @Override
    protected void initializeChildBlocks(
            NDManager manager, DataType dataType, Shape... inputShapes) {
        Shape shape = inputShapes[0];
        long width = shape.get(2);
        ln1.initialize(manager, dataType, shape);
        qkv.initialize(manager, dataType, shape);
        projection.initialize(manager, dataType, shape);
        ln2.initialize(manager, dataType, shape);
        expand.initialize(manager, dataType, shape);
        contract.initialize(manager, dataType, new Shape(shape.get(0), shape.get(1), 4 * width));
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        return inputShapes;
    }
}
