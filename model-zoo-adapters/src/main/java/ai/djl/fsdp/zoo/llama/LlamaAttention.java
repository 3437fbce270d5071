package ai.djl.fsdp.zoo.llama;

import ai.djl.fsdp.zoo.nn.Attention;
import ai.djl.fsdp.zoo.nn.AttentionKernel;
import ai.djl.fsdp.zoo.nn.HfBlock;
import ai.djl.fsdp.zoo.nn.Linear;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * Llama's grouped-query self-attention with rotary embeddings, and the variations of the families
 * built on it: biases on the query, key and value projections alone (Qwen2), RMS norms over each
 * head's queries and keys before the rotation (Qwen3's {@code q_norm}, {@code k_norm}). Inputs
 * {@code (x [B, T, C], bias [B, 1, T, S] or [T, S], cos, sin [, pastK, pastV])}; outputs {@code
 * (y)}, or {@code (y, keys, values)} when past keys and values were given. The cache holds the
 * rotated keys of the key-value heads, before they are repeated for the query groups. The kernel is
 * {@link AttentionKernel#EXPLICIT} unless set.
 */
public final class LlamaAttention extends HfBlock implements AttentionKernel.SelfAttention {

    private AttentionKernel kernel = AttentionKernel.EXPLICIT;
    private final int heads;
    private final int kvHeads;
    private final boolean qkNorm;

    LlamaAttention(LlamaConfig config) {
        int width = config.hiddenSize();
        long qWidth = (long) config.numHeads() * config.headDim();
        long kvWidth = (long) config.numKeyValueHeads() * config.headDim();
        boolean bias = config.qkvBias();
        float std = config.initializerRange();
        addChild("q_proj", new Linear(width, qWidth, bias, std));
        addChild("k_proj", new Linear(width, kvWidth, bias, std));
        addChild("v_proj", new Linear(width, kvWidth, bias, std));
        addChild("o_proj", new Linear(qWidth, width, config.outputBias(), std));
        heads = config.numHeads();
        kvHeads = config.numKeyValueHeads();
        qkNorm = config.qkNorm();
        if (qkNorm) {
            addChild("q_norm", new LlamaRMSNorm(config.headDim(), config.rmsNormEps()));
            addChild("k_norm", new LlamaRMSNorm(config.headDim(), config.rmsNormEps()));
        }
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
        NDArray cos = inputs.get(2);
        NDArray sin = inputs.get(3);
        NDList past = Attention.pastOf(inputs, 4);

        NDArray q = Attention.splitHeads(call("q_proj", ps, x, training), heads);
        NDArray k = Attention.splitHeads(call("k_proj", ps, x, training), kvHeads);
        if (qkNorm) {
            q = call("q_norm", ps, q, training);
            k = call("k_norm", ps, k, training);
        }
        q = RotaryEmbedding.apply(q, cos, sin);
        k = RotaryEmbedding.apply(k, cos, sin);
        NDArray v = Attention.splitHeads(call("v_proj", ps, x, training), kvHeads);
        if (past != null) {
            k = Attention.appendToPast(past.get(0), k);
            v = Attention.appendToPast(past.get(1), v);
        }
        // Each key-value head serves heads / kvHeads consecutive query heads.
        int groups = heads / kvHeads;
        NDArray keys = groups == 1 ? k : k.repeat(1, groups);
        NDArray values = groups == 1 ? v : v.repeat(1, groups);
        NDArray y = Attention.scaledDotProduct(kernel, q, keys, values, bias, 0, training);
        y = call("o_proj", ps, Attention.mergeHeads(y), training);
        return past == null ? new NDList(y) : new NDList(y, k, v);
    }
}
