package ai.djl.fsdp.zoo.gpt2;

import ai.djl.fsdp.lora.LinearProjection;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.tensor.op.FusedLinear;
import ai.djl.fsdp.zoo.nn.HfBlock;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.Initializer;
import ai.djl.training.initializer.NormalInitializer;
import ai.djl.util.PairList;

/**
 * GPT-2's {@code Conv1D}, a linear layer that stores its weight input-major: {@code weight [in,
 * out]}, {@code y = x W + b}. Checkpoints hold it in this layout, so it is kept rather than
 * transposed.
 */
public final class Conv1D extends HfBlock implements LinearProjection {

    private final Parameter weight;
    private final Parameter bias;

    /**
     * Creates the layer.
     *
     * @param in the input features
     * @param out the output features
     * @param std the standard deviation of the weight's normal initialization
     */
    public Conv1D(long in, long out, float std) {
        weight = addParameter("weight", new Shape(in, out), new NormalInitializer(std));
        bias = addParameter("bias", new Shape(out), Initializer.ZEROS);
    }

    @Override
    public long inFeatures() {
        return weight.getShape().get(0);
    }

    @Override
    public long outFeatures() {
        return weight.getShape().get(1);
    }

    @Override
    public boolean fanInFanOut() {
        return true;
    }

    @Override
    public void addToWeight(NDArray delta) {
        // The transposed view keeps the delta's memory alive until it is closed.
        try (NDArray transposed = delta.swapAxes(0, 1)) {
            StateDict.addInto(weight, transposed);
        }
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray x = inputs.singletonOrThrow();
        // Linear reads the transposed view of [in, out] in place and adds the bias inside the
        // product (addmm). The graph keeps its own reference to the view: this handle can go.
        try (NDArray transposed = value(ps, weight, x, training).swapAxes(0, 1)) {
            return new NDList(FusedLinear.apply(x, transposed, value(ps, bias, x, training)));
        }
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        Shape in = inputShapes[0];
        return new Shape[] {in.slice(0, in.dimension() - 1).add(outFeatures())};
    }
}
