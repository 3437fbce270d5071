package ai.djl.fsdp.zoo.gpt2;

import ai.djl.fsdp.zoo.nn.Attention;
import ai.djl.fsdp.zoo.nn.AttentionKernel;
import ai.djl.fsdp.zoo.nn.HfBlock;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * GPT-2's causal self-attention: one {@code c_attn} projection to queries, keys and values, and
 * {@code c_proj} back. Inputs {@code (x [B, T, C], bias [B, 1, T, S] or [T, S] [, pastK, pastV])};
 * outputs {@code (y)}, or {@code (y, keys, values)} when past keys and values were given.
 */
public final class GPT2Attention extends HfBlock implements AttentionKernel.SelfAttention {

    private AttentionKernel kernel = AttentionKernel.EXPLICIT;
    private final int heads;
    private final float attentionDropout;
    private final float residualDropout;

    GPT2Attention(GPT2Config config) {
        int width = config.hiddenSize();
        float std = config.initializerRange();
        addChild("c_attn", new Conv1D(width, 3L * width, std));
        addChild("c_proj", new Conv1D(width, width, config.residualProjectionStd()));
        heads = config.numHeads();
        attentionDropout = config.attentionDropout();
        residualDropout = config.residualDropout();
    }

    @Override
    public void setKernel(AttentionKernel kernel) {
        this.kernel = kernel;
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray x = inputs.get(0);
        NDArray bias = inputs.get(1);
        NDList past = Attention.pastOf(inputs, 2);

        NDList qkv = Attention.splitFusedHeads(call("c_attn", ps, x, training), heads);
        NDArray q = qkv.get(0);
        NDArray k = qkv.get(1);
        NDArray v = qkv.get(2);
        if (past != null) {
            k = Attention.appendToPast(past.get(0), k);
            v = Attention.appendToPast(past.get(1), v);
        }
        NDArray y = Attention.scaledDotProduct(kernel, q, k, v, bias, attentionDropout, training);
        y = call("c_proj", ps, Attention.mergeHeads(y), training);
        y = Attention.dropout(y, residualDropout, training);
        return past == null ? new NDList(y) : new NDList(y, k, v);
    }
}
