package ai.djl.fsdp.lora;

import ai.djl.fsdp.tensor.OwnedArrays;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.Initializer;
import ai.djl.training.initializer.UniformInitializer;
import ai.djl.util.PairList;

/**
 * A frozen projection plus a trainable low-rank update: {@code y = base(x) + (dropout(x) A^T B^T) *
 * alpha / r}, with {@code A [r, in]} and {@code B [out, r]}.
 *
 * <p>As in PEFT, {@code A} starts Kaiming-uniform ({@code a = sqrt(5)}, so uniform in {@code ±1 /
 * sqrt(in)}) and {@code B} at zero, so an adapted model starts out computing exactly what the base
 * model computes. The children are named {@code base_layer}, {@code lora_A} and {@code lora_B},
 * giving PEFT's parameter names ({@code c_attn.lora_A.weight}).
 */
public final class LoraLinear extends AbstractBlock {

    private static final String BASE = Lora.BASE_LAYER;
    private static final String A = "lora_A";
    private static final String B = "lora_B";

    private final LinearProjection base;
    private final AdapterMatrix loraA;
    private final AdapterMatrix loraB;
    private final float scaling;
    private final float dropout;

    /**
     * Wraps a projection. The adapter matrices are created but not initialized: {@link Lora#apply}
     * initializes them next to an initialized base weight, or the model's initialization does.
     *
     * @param base the projection to adapt
     * @param config the rank, alpha and dropout
     */
    public LoraLinear(LinearProjection base, LoraConfig config) {
        this.base = addChildBlock(BASE, base);
        long in = base.inFeatures();
        // Kaiming-uniform with a = sqrt(5): gain sqrt(2 / (1 + 5)), bound gain * sqrt(3 / in) = 1 /
        // sqrt(in).
        loraA =
                addChildBlock(
                        A,
                        new AdapterMatrix(
                                in,
                                config.getRank(),
                                new UniformInitializer((float) (1 / Math.sqrt(in)))));
        loraB =
                addChildBlock(
                        B,
                        new AdapterMatrix(config.getRank(), base.outFeatures(), Initializer.ZEROS));
        scaling = config.getScaling();
        dropout = config.getDropout();
    }

    /**
     * Returns the wrapped projection.
     *
     * @return the base projection
     */
    public LinearProjection getBase() {
        return base;
    }

    /**
     * Returns {@code A}, {@code [r, in]}.
     *
     * @return the down projection's parameter
     */
    public Parameter getLoraA() {
        return loraA.weight();
    }

    /**
     * Returns {@code B}, {@code [out, r]}.
     *
     * @return the up projection's parameter
     */
    public Parameter getLoraB() {
        return loraB.weight();
    }

    /**
     * Returns the update this adapter adds to the base weight, {@code B A * alpha / r}, {@code
     * [out, in]}, detached from any gradient graph. The caller closes it.
     *
     * @return the weight delta
     */
    public NDArray getDeltaWeight() {
        // Every intermediate is closed here: left to the parameters' long-lived manager, the
        // product (the size of the base weight) would stay until the model is closed.
        try (NDArray a = getLoraA().getArray().stopGradient();
                NDArray b = getLoraB().getArray().stopGradient();
                NDArray product = b.matMul(a)) {
            return product.mul(scaling);
        }
    }

    /**
     * Adds this adapter's update into the base projection's weight, in place, in the weight's own
     * layout: the merge of one adapter, whether the whole model is merged at once or one FSDP unit
     * at a time.
     */
    public void mergeIntoBase() {
        try (NDArray delta = getDeltaWeight()) {
            base.addToWeight(delta);
        }
    }

    /**
     * Adds this adapter's update, in place, into {@code weight}: an array laid out as the base's
     * weight (a copy of it, such as a gathered unit's), which is how a merged model is written one
     * tensor at a time without changing the model.
     *
     * @param weight a copy of the base weight, in its layout
     */
    public void mergeInto(NDArray weight) {
        // One temporary the size of the weight: the product, scaled in place.
        try (NDArray a = getLoraA().getArray().stopGradient();
                NDArray b = getLoraB().getArray().stopGradient();
                NDArray delta = b.matMul(a);
                NDArray alias = weight.stopGradient()) {
            delta.muli(scaling);
            if (base.fanInFanOut()) {
                try (NDArray transposed = delta.swapAxes(0, 1)) {
                    alias.addi(transposed);
                }
            } else {
                alias.addi(delta);
            }
        }
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore parameterStore,
            NDList inputs,
            boolean training,
            PairList<String, Object> params) {
        NDArray x = inputs.singletonOrThrow();
        NDArray y = base.forward(parameterStore, inputs, training, params).singletonOrThrow();
        NDArray adapterInput =
                training && dropout > 0
                        ? x.getNDArrayInternal().dropout(x, dropout, true).singletonOrThrow()
                        : x;
        NDList down = loraA.forward(parameterStore, new NDList(adapterInput), training, params);
        NDArray update = loraB.forward(parameterStore, down, training, params).singletonOrThrow();
        return new NDList(y.add(update.mul(OwnedArrays.scalar(update, scaling))));
    }

    @Override
    protected void initializeChildBlocks(
            NDManager manager, DataType dataType, Shape... inputShapes) {
        base.initialize(manager, dataType, inputShapes);
        loraA.initialize(manager, dataType, inputShapes);
        loraB.initialize(manager, dataType, loraA.getOutputShapes(inputShapes));
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        return base.getOutputShapes(inputShapes);
    }
}
