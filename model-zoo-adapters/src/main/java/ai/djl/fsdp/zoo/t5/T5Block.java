package ai.djl.fsdp.zoo.t5;

import ai.djl.fsdp.zoo.nn.HfBlock;
import ai.djl.fsdp.zoo.nn.ModuleList;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.nn.Block;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;
import java.util.ArrayList;
import java.util.List;

/**
 * One T5 block, the FSDP unit of both stacks: {@code layer.0} self-attention, in the decoder {@code
 * layer.1} attention over the encoder's output, then the feed-forward sub-layer, each pre-norm with
 * a residual. The first block of a stack holds the relative position bias: it is given the mask
 * alone and returns, after the hidden states, the position bias (its learned bias plus the mask)
 * that every later block of the stack is given instead. A pure function of its inputs, as FSDP's
 * recompute needs: the shared bias reaches later blocks as an output of the first, so its gradient
 * comes back to the first block's unit.
 *
 * <p>Encoder: inputs {@code (x [B, S, C], bias)}, outputs {@code (x [, positionBias])}. Decoder:
 * inputs {@code (x [B, T, C], bias, encoderStates [B, S, C], crossBias [B, 1, 1, S] [, pastK,
 * pastV, crossK, crossV])}, outputs {@code (x [, positionBias] [, keys, values, crossK, crossV])},
 * the cache's four when it was given.
 */
public final class T5Block extends HfBlock {

    private final boolean decoder;
    private final boolean first;

    T5Block(T5Config config, boolean decoder, boolean first) {
        List<Block> layers = new ArrayList<>();
        layers.add(
                new T5LayerAttention(
                        config, "SelfAttention", new T5Attention(config, false, first, !decoder)));
        if (decoder) {
            layers.add(
                    new T5LayerAttention(
                            config,
                            "EncDecAttention",
                            new T5Attention(config, true, false, false)));
        }
        layers.add(new T5LayerFF(config));
        addChild("layer", new ModuleList(layers));
        this.decoder = decoder;
        this.first = first;
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        ModuleList layer = (ModuleList) child("layer");
        int fixed = decoder ? 4 : 2;
        boolean cached = decoder && inputs.size() == fixed + 4;
        if (inputs.size() != fixed && !cached) {
            throw new IllegalArgumentException(
                    "a T5 "
                            + (decoder ? "decoder" : "encoder")
                            + " block takes "
                            + fixed
                            + " inputs"
                            + (decoder ? ", or 8 with the cache's keys and values" : "")
                            + "; got "
                            + inputs.size());
        }
        NDList self = new NDList(inputs.get(0), inputs.get(1));
        if (cached) {
            self.addAll(inputs.subNDList(fixed, fixed + 2));
        }
        NDList attended = layer.get(0).forward(ps, self, training);
        NDArray x = attended.get(0);
        NDList out = new NDList();
        if (first) {
            out.add(attended.get(1));
        }
        if (cached) {
            out.addAll(attended.subNDList(2));
        }
        if (decoder) {
            NDList crossInputs = new NDList(x, inputs.get(2), inputs.get(3));
            if (cached) {
                crossInputs.addAll(inputs.subNDList(fixed + 2));
            }
            NDList crossed = layer.get(1).forward(ps, crossInputs, training);
            x = crossed.get(0);
            out.addAll(crossed.subNDList(1));
        }
        x = layer.get(layer.size() - 1).forward(ps, new NDList(x), training).singletonOrThrow();
        NDList result = new NDList(x);
        result.addAll(out);
        return result;
    }
}
