package ai.djl.fsdp.zoo.nn;

import ai.djl.fsdp.lora.LinearProjection;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.Initializer;
import ai.djl.training.initializer.NormalInitializer;
import ai.djl.util.PairList;

/**
 * PyTorch's {@code nn.Linear}: {@code y = x W^T + b} with {@code weight [out, in]} and an optional
 * {@code bias [out]}. The weight can be another block's parameter (a head tied to the token
 * embedding), shared, not copied.
 */
public final class Linear extends HfBlock implements LinearProjection {

    private final Parameter weight;
    private final Parameter bias;

    /**
     * Creates a projection with its own weight.
     *
     * @param in the input features
     * @param out the output features
     * @param bias whether to add a bias
     * @param std the standard deviation of the weight's normal initialization
     */
    public Linear(long in, long out, boolean bias, float std) {
        weight = addParameter("weight", new Shape(out, in), new NormalInitializer(std));
        this.bias = bias ? addParameter("bias", new Shape(out), Initializer.ZEROS) : null;
    }

    /**
     * Creates a bias-free projection whose weight is an existing {@code [out, in]} parameter.
     *
     * @param tiedWeight the shared weight
     */
    public Linear(Parameter tiedWeight) {
        weight = addParameter(tiedWeight);
        bias = null;
    }

    @Override
    public long inFeatures() {
        return weight.getShape().get(1);
    }

    @Override
    public long outFeatures() {
        return weight.getShape().get(0);
    }

    @Override
    public boolean fanInFanOut() {
        return false;
    }

    /**
     * Returns whether the projection adds a bias.
     *
     * @return true if it has a bias
     */
    public boolean hasBias() {
        return bias != null;
    }

    /**
     * Returns the weight's value for this pass, {@code [out, in]}: what {@code forward} multiplies
     * by, for a caller that computes the product itself (a loss that owns the head's product).
     *
     * @param ps the parameter store
     * @param like an array on the device to use
     * @param training whether this is a training pass
     * @return the weight
     */
    public NDArray weightValue(ParameterStore ps, NDArray like, boolean training) {
        return value(ps, weight, like, training);
    }

    @Override
    public void addToWeight(NDArray delta) {
        StateDict.addInto(weight, delta);
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray x = inputs.singletonOrThrow();
        NDArray y = x.matMul(value(ps, weight, x, training).swapAxes(0, 1));
        return new NDList(bias == null ? y : y.add(value(ps, bias, x, training)));
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        Shape in = inputShapes[0];
        return new Shape[] {in.slice(0, in.dimension() - 1).add(outFeatures())};
    }
}
