package ai.djl.fsdp.zoo.t5;

import ai.djl.fsdp.zoo.EncoderDecoderCache;
import ai.djl.fsdp.zoo.llama.LlamaRMSNorm;
import ai.djl.fsdp.zoo.nn.Attention;
import ai.djl.fsdp.zoo.nn.Embedding;
import ai.djl.fsdp.zoo.nn.HfBlock;
import ai.djl.fsdp.zoo.nn.ModuleList;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;
import java.util.ArrayList;
import java.util.List;

/**
 * T5's encoder or decoder ({@code T5Stack}): {@code embed_tokens} (the model's {@code shared} block
 * itself, as Hugging Face's stacks hold it, not a copy), the {@code block}s, {@code
 * final_layer_norm}, with dropout after the embedding and after the norm. The stack's first block
 * turns the mask it is given into the position bias the others are given (see {@link T5Block}); the
 * decoder's blocks are also given the encoder's output and its padding bias and, when generating,
 * their self-attention keys and values so far and the encoder's keys and values, computed at the
 * first step.
 */
final class T5Stack extends HfBlock {

    private final long heads;
    private final long headDim;
    private final float dropout;

    T5Stack(T5Config config, boolean decoder, Embedding shared) {
        addChild("embed_tokens", shared);
        int count = decoder ? config.numDecoderLayers() : config.numLayers();
        List<T5Block> blocks = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            blocks.add(new T5Block(config, decoder, i == 0));
        }
        addChild("block", new ModuleList(blocks));
        addChild(
                "final_layer_norm",
                new LlamaRMSNorm(config.hiddenSize(), config.layerNormEpsilon()));
        heads = config.numHeads();
        headDim = config.headDim();
        dropout = config.dropoutRate();
    }

    /**
     * Runs the stack.
     *
     * @param ps the parameter store
     * @param ids the tokens {@code [B, T]}
     * @param bias the encoder's padding bias {@code [B, 1, 1, S]}, or the decoder's causal bias
     * @param encoder the decoder's inputs after its bias: the encoder's output and padding bias;
     *     empty for the encoder
     * @param cache the decoder's self- and cross-attention caches, or null
     * @param training whether this is a training pass
     * @return the final hidden states {@code [B, T, C]}
     */
    NDArray forward(
            ParameterStore ps,
            NDArray ids,
            NDArray bias,
            NDList encoder,
            EncoderDecoderCache cache,
            boolean training) {
        NDArray x = Attention.dropout(call("embed_tokens", ps, ids, training), dropout, training);
        ModuleList blocks = (ModuleList) child("block");
        long batch = ids.getShape().get(0);
        NDArray positionBias = bias;
        for (int i = 0; i < blocks.size(); i++) {
            NDList inputs = new NDList(x, positionBias);
            inputs.addAll(encoder);
            if (cache != null) {
                inputs.addAll(cache.selfAttention().past(i, batch, heads, headDim));
                inputs.addAll(cache.crossAttention().past(i, batch, heads, headDim));
            }
            NDList out = blocks.get(i).forward(ps, inputs, training);
            int next = 1;
            if (i == 0) {
                positionBias = out.get(next++);
            }
            if (cache != null) {
                cache.selfAttention().update(i, out.subNDList(next, next + 2));
                cache.crossAttention().update(i, out.subNDList(next + 2, next + 4));
            }
            x = out.get(0);
        }
        return Attention.dropout(call("final_layer_norm", ps, x, training), dropout, training);
    }

    /**
     * Runs the stack without a cache: inputs {@code (ids [B, T], bias [, encoderStates,
     * crossBias])}, outputs {@code (hidden [B, T, C])}.
     */
    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        return new NDList(
                forward(ps, inputs.get(0), inputs.get(1), inputs.subNDList(2), null, training));
    }
}
