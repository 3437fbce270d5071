package ai.djl.fsdp.zoo;

import ai.djl.fsdp.zoo.nn.Attention;
import ai.djl.fsdp.zoo.nn.HfBlock;
import ai.djl.fsdp.zoo.nn.ModuleList;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Block;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * The base model inside a {@link CausalLM} (GPT-2's {@code transformer}, Llama's {@code model}):
 * embeddings, the decoder layers, the final norm. A pass computes the position ids and the
 * attention bias once, embeds the tokens, runs every layer with the bias, the family's position
 * inputs (Llama's rotary tables) and, with a cache, the layer's past keys and values, then the
 * final norm. Subclasses add the children and say how tokens are embedded.
 */
public abstract class DecoderModel extends HfBlock {

    private final String layers;
    private final String norm;
    private final long kvHeads;
    private final long headDim;

    /**
     * Names the children the pass calls; the subclass adds them.
     *
     * @param layers the {@link ModuleList} of decoder layers ({@code h}, {@code layers})
     * @param norm the final norm ({@code ln_f}, {@code norm})
     * @param kvHeads the key-value heads each layer caches
     * @param headDim the head size
     */
    protected DecoderModel(String layers, String norm, long kvHeads, long headDim) {
        this.layers = layers;
        this.norm = norm;
        this.kvHeads = kvHeads;
        this.headDim = headDim;
    }

    /**
     * Returns the block in the token embedding's place, looked up by name rather than held in a
     * field, so that FSDP may make it a unit of its own: the embedding, or the unit standing in for
     * it once the model is sharded.
     *
     * @return the token embedding ({@code wte}, {@code embed_tokens}) or its unit
     */
    public abstract Block getTokenEmbedding();

    /**
     * Embeds the new tokens.
     *
     * @param ps the parameter store
     * @param ids the tokens {@code [B, T]}
     * @param positions their position ids {@code [B, T]}
     * @param training whether this is a training pass
     * @return the hidden states {@code [B, T, C]}
     */
    protected abstract NDArray embed(
            ParameterStore ps, NDArray ids, NDArray positions, boolean training);

    /**
     * Checks that the model covers a sequence of this many tokens, cached and new.
     *
     * @param tokens the sequence length
     * @throws IllegalArgumentException if it does not
     */
    protected void checkSequenceLength(long tokens) {}

    /**
     * Returns the inputs every layer receives after the hidden states and the bias: none unless the
     * family has some (Llama's rotary {@code cos} and {@code sin}).
     *
     * @param manager the manager of the pass
     * @param positions the position ids {@code [B, T]}
     * @return the inputs
     */
    protected NDList positionInputs(NDManager manager, NDArray positions) {
        return new NDList();
    }

    /**
     * Returns the sliding attention window: a query sees only the keys of the last this many
     * positions, itself included; 0 for none.
     *
     * @return the window, or 0
     */
    protected long slidingWindow() {
        return 0;
    }

    /**
     * Runs the stack; see {@link CausalLM#forward}.
     *
     * @param ps the parameter store
     * @param ids the new tokens {@code [B, T]}, int64
     * @param mask {@code [B, cached + T]}, or null
     * @param cache the cache to read and extend, or null
     * @param training whether this is a training pass
     * @return the final hidden states {@code [B, T, C]}
     */
    public NDArray forward(
            ParameterStore ps, NDArray ids, NDArray mask, KvCache cache, boolean training) {
        NDManager manager = ids.getManager();
        long batch = ids.getShape().get(0);
        long length = ids.getShape().get(1);
        long past = cache == null ? 0 : cache.length();
        checkSequenceLength(past + length);
        NDArray positions = Attention.positionIds(manager, mask, batch, past, length);
        NDList shared =
                new NDList(
                        Attention.causalBias(manager, mask, batch, past, length, slidingWindow()));
        shared.addAll(positionInputs(manager, positions));

        NDArray x = embed(ps, ids, positions, training);
        ModuleList stack = (ModuleList) child(layers);
        for (int i = 0; i < stack.size(); i++) {
            NDList inputs = new NDList(x);
            inputs.addAll(shared);
            if (cache != null) {
                inputs.addAll(cache.past(i, batch, kvHeads, headDim));
            }
            NDList out = stack.get(i).forward(ps, inputs, training);
            if (cache != null) {
                cache.update(i, out.subNDList(1));
            }
            x = out.get(0);
        }
        return call(norm, ps, x, training);
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray mask = inputs.size() > 1 ? inputs.get(1) : null;
        return new NDList(forward(ps, inputs.get(0), mask, null, training));
    }
}
