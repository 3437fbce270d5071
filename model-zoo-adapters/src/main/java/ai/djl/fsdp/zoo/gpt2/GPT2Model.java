package ai.djl.fsdp.zoo.gpt2;

import ai.djl.fsdp.zoo.DecoderModel;
import ai.djl.fsdp.zoo.nn.Attention;
import ai.djl.fsdp.zoo.nn.Embedding;
import ai.djl.fsdp.zoo.nn.LayerNorm;
import ai.djl.fsdp.zoo.nn.ModuleList;
import ai.djl.ndarray.NDArray;
import ai.djl.nn.Block;
import ai.djl.training.ParameterStore;
import java.util.ArrayList;
import java.util.List;

/**
 * GPT-2's decoder stack ({@code transformer}): token and position embeddings {@code wte}, {@code
 * wpe}, the layers {@code h}, and the final norm {@code ln_f}.
 */
public final class GPT2Model extends DecoderModel {

    private final GPT2Config config;

    GPT2Model(GPT2Config config) {
        super("h", "ln_f", config.numHeads(), config.hiddenSize() / config.numHeads());
        this.config = config;
        float std = config.initializerRange();
        addChild("wte", new Embedding(config.vocabSize(), config.hiddenSize(), std));
        addChild("wpe", new Embedding(config.maxPositions(), config.hiddenSize(), std));
        List<GPT2Block> blocks = new ArrayList<>();
        for (int i = 0; i < config.numLayers(); i++) {
            blocks.add(new GPT2Block(config));
        }
        addChild("h", new ModuleList(blocks));
        addChild("ln_f", new LayerNorm(config.hiddenSize(), config.layerNormEpsilon()));
    }

    @Override
    public Block getTokenEmbedding() {
        return child("wte");
    }

    /** GPT-2's positions are learned embeddings, which end at {@code n_positions}. */
    @Override
    protected void checkSequenceLength(long tokens) {
        if (tokens > config.maxPositions()) {
            throw new IllegalArgumentException(
                    "sequence of "
                            + tokens
                            + " tokens exceeds n_positions "
                            + config.maxPositions());
        }
    }

    @Override
    protected NDArray embed(ParameterStore ps, NDArray ids, NDArray positions, boolean training) {
        NDArray x = call("wte", ps, ids, training).add(call("wpe", ps, positions, training));
        return Attention.dropout(x, config.embeddingDropout(), training);
    }
}
