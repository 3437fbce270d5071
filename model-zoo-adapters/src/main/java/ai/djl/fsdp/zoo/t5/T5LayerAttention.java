package ai.djl.fsdp.zoo.t5;

import ai.djl.fsdp.zoo.llama.LlamaRMSNorm;
import ai.djl.fsdp.zoo.nn.Attention;
import ai.djl.fsdp.zoo.nn.HfBlock;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * A T5 block's attention sub-layer, pre-norm with a residual: {@code x + dropout(attention(
 * layer_norm(x), rest...))}. Hugging Face's {@code T5LayerSelfAttention} (the attention named
 * {@code SelfAttention}) and {@code T5LayerCrossAttention} ({@code EncDecAttention}) differ only in
 * that name and in what the attention is given. Outputs the new hidden states followed by whatever
 * the attention returned after its output.
 */
final class T5LayerAttention extends HfBlock {

    private final String attention;
    private final float dropout;

    /**
     * Builds the sub-layer.
     *
     * @param config the configuration
     * @param name {@code SelfAttention} or {@code EncDecAttention}
     * @param block the attention
     */
    T5LayerAttention(T5Config config, String name, T5Attention block) {
        addChild(name, block);
        addChild("layer_norm", new LlamaRMSNorm(config.hiddenSize(), config.layerNormEpsilon()));
        attention = name;
        dropout = config.dropoutRate();
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray x = inputs.get(0);
        NDList attentionInputs = new NDList(call("layer_norm", ps, x, training));
        attentionInputs.addAll(inputs.subNDList(1));
        NDList out = child(attention).forward(ps, attentionInputs, training);
        NDList result = new NDList(x.add(Attention.dropout(out.get(0), dropout, training)));
        result.addAll(out.subNDList(1));
        return result;
    }
}
