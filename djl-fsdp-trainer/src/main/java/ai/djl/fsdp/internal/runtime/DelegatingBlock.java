package ai.djl.fsdp.internal.runtime;

import ai.djl.MalformedModelException;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.BlockList;
import ai.djl.nn.Parameter;
import ai.djl.nn.ParameterList;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.Initializer;
import ai.djl.util.PairList;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.function.Predicate;

/**
 * A block that stands in a parent for another: every call goes to the inner block, so parameter
 * names, children and serialization are unchanged; subclasses take over one call ({@link UnitBlock}
 * the forward, {@link UnitInitialization}'s stand-in the initialization).
 */
abstract class DelegatingBlock implements Block {

    private final Block inner;

    DelegatingBlock(Block inner) {
        this.inner = inner;
    }

    @Override
    public NDList forward(
            ParameterStore parameterStore,
            NDList inputs,
            boolean training,
            PairList<String, Object> params) {
        return inner.forward(parameterStore, inputs, training, params);
    }

    /** Returns the block stood in for. */
    Block inner() {
        return inner;
    }

    @Override
    public void setInitializer(Initializer initializer, Parameter.Type type) {
        inner.setInitializer(initializer, type);
    }

    @Override
    public void setInitializer(Initializer initializer, String paramName) {
        inner.setInitializer(initializer, paramName);
    }

    @Override
    public void setInitializer(Initializer initializer, Predicate<Parameter> predicate) {
        inner.setInitializer(initializer, predicate);
    }

    @Override
    public void initialize(NDManager manager, DataType dataType, Shape... inputShapes) {
        inner.initialize(manager, dataType, inputShapes);
    }

    @Override
    public boolean isInitialized() {
        return inner.isInitialized();
    }

    @Override
    public void cast(DataType dataType) {
        inner.cast(dataType);
    }

    @Override
    public void clear() {
        inner.clear();
    }

    @Override
    public PairList<String, Shape> describeInput() {
        return inner.describeInput();
    }

    @Override
    public BlockList getChildren() {
        return inner.getChildren();
    }

    @Override
    public ParameterList getDirectParameters() {
        return inner.getDirectParameters();
    }

    @Override
    public ParameterList getParameters() {
        return inner.getParameters();
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        return inner.getOutputShapes(inputShapes);
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes, DataType[] dataTypes) {
        return inner.getOutputShapes(inputShapes, dataTypes);
    }

    @Override
    public Shape[] getInputShapes() {
        return inner.getInputShapes();
    }

    @Override
    public DataType[] getOutputDataTypes() {
        return inner.getOutputDataTypes();
    }

    @Override
    public void saveParameters(DataOutputStream os) throws IOException {
        inner.saveParameters(os);
    }

    @Override
    public void loadParameters(NDManager manager, DataInputStream is)
            throws IOException, MalformedModelException {
        inner.loadParameters(manager, is);
    }
}
