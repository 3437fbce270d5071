package ai.djl.fsdp.zoo.nn;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * A pre-norm transformer decoder layer: {@code x + attention(attentionNorm(x))}, then {@code +
 * mlp(mlpNorm(.))}. Subclasses add the four children under the names they pass here (their
 * checkpoint's names); FSDP wraps the subclass by its simple class name.
 *
 * <p>Inputs {@code (hidden [B, T, C], rest...)}: the rest (mask, rotary tables, past keys and
 * values) go to the attention unchanged. Outputs {@code (hidden)} followed by whatever the
 * attention returned after its output (the present keys and values, when past ones were given).
 */
public abstract class PreNormDecoderLayer extends HfBlock {

    private final String attentionNorm;
    private final String attention;
    private final String mlpNorm;
    private final String mlp;

    /**
     * Names this layer's children; the subclass adds them.
     *
     * @param attentionNorm the norm before the attention
     * @param attention the attention
     * @param mlpNorm the norm before the MLP
     * @param mlp the MLP
     */
    protected PreNormDecoderLayer(
            String attentionNorm, String attention, String mlpNorm, String mlp) {
        this.attentionNorm = attentionNorm;
        this.attention = attention;
        this.mlpNorm = mlpNorm;
        this.mlp = mlp;
    }

    @Override
    protected final NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray x = inputs.get(0);
        NDList attnInputs = new NDList(call(attentionNorm, ps, x, training));
        attnInputs.addAll(inputs.subNDList(1));
        NDList attn = child(attention).forward(ps, attnInputs, training);

        x = x.add(attn.get(0));
        x = x.add(call(mlp, ps, call(mlpNorm, ps, x, training), training));

        NDList out = new NDList(x);
        out.addAll(attn.subNDList(1));
        return out;
    }
}
