package ai.djl.fsdp.zoo.llama;

import ai.djl.fsdp.zoo.DecoderModel;
import ai.djl.fsdp.zoo.nn.Embedding;
import ai.djl.fsdp.zoo.nn.ModuleList;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Block;
import ai.djl.training.ParameterStore;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * Llama's decoder stack ({@code model}): {@code embed_tokens}, the {@code layers}, and the final
 * {@code norm}. Rotary cos/sin are computed once per pass and handed to every layer, and so is the
 * attention bias, limited to the sliding window where the family has one.
 */
public final class LlamaModel extends DecoderModel {

    private final RotaryEmbedding rotary;
    private final int slidingWindow;

    LlamaModel(LlamaConfig config, Supplier<? extends LlamaDecoderLayer> layer) {
        super("layers", "norm", config.numKeyValueHeads(), config.headDim());
        addChild(
                "embed_tokens",
                new Embedding(config.vocabSize(), config.hiddenSize(), config.initializerRange()));
        List<LlamaDecoderLayer> decoderLayers = new ArrayList<>();
        for (int i = 0; i < config.numLayers(); i++) {
            decoderLayers.add(layer.get());
        }
        addChild("layers", new ModuleList(decoderLayers));
        addChild("norm", new LlamaRMSNorm(config.hiddenSize(), config.rmsNormEps()));
        rotary = new RotaryEmbedding(config);
        slidingWindow = config.slidingWindow();
    }

    @Override
    public Block getTokenEmbedding() {
        return child("embed_tokens");
    }

    @Override
    protected NDArray embed(ParameterStore ps, NDArray ids, NDArray positions, boolean training) {
        return call("embed_tokens", ps, ids, training);
    }

    @Override
    protected NDList positionInputs(NDManager manager, NDArray positions) {
        return rotary.cosSin(manager, positions);
    }

    @Override
    protected long slidingWindow() {
        return slidingWindow;
    }
}
