package ai.djl.fsdp.zoo.gpt2;

import ai.djl.fsdp.zoo.KvCache;
import ai.djl.fsdp.zoo.nn.Attention;
import ai.djl.fsdp.zoo.nn.Embedding;
import ai.djl.fsdp.zoo.nn.HfBlock;
import ai.djl.fsdp.zoo.nn.LayerNorm;
import ai.djl.fsdp.zoo.nn.ModuleList;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;
import java.util.ArrayList;
import java.util.List;

/**
 * GPT-2's decoder stack ({@code transformer}): token and position embeddings {@code wte}, {@code
 * wpe}, the layers {@code h}, and the final norm {@code ln_f}.
 */
public final class GPT2Model extends HfBlock {

    private final GPT2Config config;
    private final Embedding wte;
    private final ModuleList h;

    GPT2Model(GPT2Config config) {
        this.config = config;
        float std = config.initializerRange();
        wte = addChild("wte", new Embedding(config.vocabSize(), config.hiddenSize(), std));
        addChild("wpe", new Embedding(config.maxPositions(), config.hiddenSize(), std));
        List<GPT2Block> blocks = new ArrayList<>();
        for (int i = 0; i < config.numLayers(); i++) {
            blocks.add(new GPT2Block(config));
        }
        h = addChild("h", new ModuleList(blocks));
        addChild("ln_f", new LayerNorm(config.hiddenSize(), config.layerNormEpsilon()));
    }

    Embedding getTokenEmbedding() {
        return wte;
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
        if (past + length > config.maxPositions()) {
            throw new IllegalArgumentException(
                    "sequence of "
                            + (past + length)
                            + " tokens exceeds n_positions "
                            + config.maxPositions());
        }
        NDArray positions = Attention.positionIds(manager, mask, batch, past, length);
        NDArray bias = Attention.causalBias(manager, mask, batch, past, length);

        NDArray x = call("wte", ps, ids, training).add(call("wpe", ps, positions, training));
        x = Attention.dropout(x, config.embeddingDropout(), training);
        long headDim = config.hiddenSize() / config.numHeads();
        for (int i = 0; i < h.size(); i++) {
            NDList inputs = new NDList(x, bias);
            if (cache != null) {
                inputs.addAll(cache.past(i, batch, config.numHeads(), headDim));
            }
            NDList out = h.get(i).forward(ps, inputs, training);
            if (cache != null) {
                cache.update(i, out.subNDList(1));
            }
            x = out.get(0);
        }
        return call("ln_f", ps, x, training);
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray mask = inputs.size() > 1 ? inputs.get(1) : null;
        return new NDList(forward(ps, inputs.get(0), mask, null, training));
    }
}
