package ai.djl.fsdp.zoo.nn;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.ndarray.types.SparseFormat;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.NormalInitializer;
import ai.djl.util.PairList;

/**
 * PyTorch's {@code nn.Embedding}: looks up rows of {@code weight [num, dim]} by int64 index. The
 * table can be another block's parameter, shared, not copied.
 */
public final class Embedding extends HfBlock {

    private final Parameter weight;

    /**
     * Creates an embedding table.
     *
     * @param num the number of rows (vocabulary or positions)
     * @param dim the row size
     * @param std the standard deviation of the normal initialization
     */
    public Embedding(long num, long dim, float std) {
        weight = addParameter("weight", new Shape(num, dim), new NormalInitializer(std));
    }

    /**
     * Returns the table, for an output head tied to it.
     *
     * @return the weight parameter
     */
    public Parameter getWeight() {
        return weight;
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray ids = inputs.singletonOrThrow();
        NDArray table = value(ps, weight, ids, training);
        return ids.getNDArrayInternal().embedding(ids, table, SparseFormat.DENSE);
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        return new Shape[] {inputShapes[0].add(weight.getShape().get(1))};
    }
}
