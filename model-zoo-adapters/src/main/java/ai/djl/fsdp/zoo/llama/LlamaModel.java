package ai.djl.fsdp.zoo.llama;

import ai.djl.fsdp.zoo.KvCache;
import ai.djl.fsdp.zoo.nn.Attention;
import ai.djl.fsdp.zoo.nn.Embedding;
import ai.djl.fsdp.zoo.nn.HfBlock;
import ai.djl.fsdp.zoo.nn.ModuleList;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;
import java.util.ArrayList;
import java.util.List;

/**
 * Llama's decoder stack ({@code model}): {@code embed_tokens}, the {@code layers}, and the final
 * {@code norm}. Rotary cos/sin are computed once per pass and handed to every layer.
 */
public final class LlamaModel extends HfBlock {

    private final LlamaConfig config;
    private final Embedding embedTokens;
    private final ModuleList layers;
    private final RotaryEmbedding rotary;

    LlamaModel(LlamaConfig config) {
        this.config = config;
        embedTokens =
                addChild(
                        "embed_tokens",
                        new Embedding(
                                config.vocabSize(),
                                config.hiddenSize(),
                                config.initializerRange()));
        List<LlamaDecoderLayer> decoderLayers = new ArrayList<>();
        for (int i = 0; i < config.numLayers(); i++) {
            decoderLayers.add(new LlamaDecoderLayer(config));
        }
        layers = addChild("layers", new ModuleList(decoderLayers));
        addChild("norm", new LlamaRMSNorm(config.hiddenSize(), config.rmsNormEps()));
        rotary = new RotaryEmbedding(config.headDim(), config.ropeTheta());
    }

    Embedding getTokenEmbedding() {
        return embedTokens;
    }

    /**
     * Runs the stack; see {@link ai.djl.fsdp.zoo.CausalLM#forward}.
     *
     * @return the final hidden states {@code [B, T, C]}
     */
    NDArray forward(ParameterStore ps, NDArray ids, NDArray mask, KvCache cache, boolean training) {
        NDManager manager = ids.getManager();
        long batch = ids.getShape().get(0);
        long length = ids.getShape().get(1);
        long past = cache == null ? 0 : cache.length();
        NDArray positions = Attention.positionIds(manager, mask, batch, past, length);
        NDArray bias = Attention.causalBias(manager, mask, batch, past, length);
        NDList cosSin = rotary.cosSin(manager, positions);

        NDArray x = call("embed_tokens", ps, ids, training);
        for (int i = 0; i < layers.size(); i++) {
            NDList inputs = new NDList(x, bias, cosSin.get(0), cosSin.get(1));
            if (cache != null) {
                inputs.addAll(cache.past(i, batch, config.numKeyValueHeads(), config.headDim()));
            }
            NDList out = layers.get(i).forward(ps, inputs, training);
            if (cache != null) {
                cache.update(i, out.subNDList(1));
            }
            x = out.get(0);
        }
        return call("norm", ps, x, training);
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray mask = inputs.size() > 1 ? inputs.get(1) : null;
        return new NDList(forward(ps, inputs.get(0), mask, null, training));
    }
}
