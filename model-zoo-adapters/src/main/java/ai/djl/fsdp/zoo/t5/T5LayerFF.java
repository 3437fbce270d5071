package ai.djl.fsdp.zoo.t5;

import ai.djl.fsdp.tensor.op.FusedActivation;
import ai.djl.fsdp.zoo.llama.LlamaRMSNorm;
import ai.djl.fsdp.zoo.nn.Attention;
import ai.djl.fsdp.zoo.nn.HfBlock;
import ai.djl.fsdp.zoo.nn.Linear;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.nn.Activation;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * A T5 block's feed-forward sub-layer: {@code x + dropout(DenseReluDense(layer_norm(x)))}, where
 * {@code DenseReluDense} is {@code wo(dropout(relu(wi x)))} ({@code feed_forward_proj} {@code
 * relu}, T5) or {@code wo(dropout(gelu_new(wi_0 x) * wi_1 x))} ({@code gated-gelu}, T5 v1.1 and
 * Flan-T5; {@code gelu_new} is GELU's tanh approximation), all without biases.
 */
final class T5LayerFF extends HfBlock {

    private final float dropout;

    T5LayerFF(T5Config config) {
        addChild("DenseReluDense", new DenseActDense(config));
        addChild("layer_norm", new LlamaRMSNorm(config.hiddenSize(), config.layerNormEpsilon()));
        dropout = config.dropoutRate();
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray x = inputs.singletonOrThrow();
        NDArray y = call("DenseReluDense", ps, call("layer_norm", ps, x, training), training);
        return new NDList(x.add(Attention.dropout(y, dropout, training)));
    }

    /** Hugging Face's {@code T5DenseActDense} and {@code T5DenseGatedActDense}. */
    static final class DenseActDense extends HfBlock {

        private final boolean gated;
        private final float dropout;

        DenseActDense(T5Config config) {
            int width = config.hiddenSize();
            int inner = config.feedForwardSize();
            float in = T5Attention.std(config.initializerFactor(), width);
            gated = config.gatedFeedForward();
            if (gated) {
                addChild("wi_0", new Linear(width, inner, false, in));
                addChild("wi_1", new Linear(width, inner, false, in));
            } else {
                addChild("wi", new Linear(width, inner, false, in));
            }
            addChild(
                    "wo",
                    new Linear(
                            inner,
                            width,
                            false,
                            T5Attention.std(config.initializerFactor(), inner)));
            dropout = config.dropoutRate();
        }

        @Override
        protected NDList forwardInternal(
                ParameterStore ps,
                NDList inputs,
                boolean training,
                PairList<String, Object> params) {
            NDArray x = inputs.singletonOrThrow();
            NDArray h =
                    gated
                            ? FusedActivation.geluTanh(call("wi_0", ps, x, training))
                                    .mul(call("wi_1", ps, x, training))
                            : Activation.relu(call("wi", ps, x, training));
            return new NDList(call("wo", ps, Attention.dropout(h, dropout, training), training));
        }
    }
}
