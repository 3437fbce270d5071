package ai.djl.fsdp.zoo.nn;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.Initializer;
import java.util.HashMap;
import java.util.Map;

/**
 * The base of the zoo's blocks: a block shaped like a PyTorch module. Children and parameters carry
 * the module's attribute names, so {@link ai.djl.fsdp.statedict.StateDict} gives Hugging Face's
 * parameter names; every parameter has its shape from construction, so initialization needs no
 * shape inference; and children are looked up in DJL's child list at each call, so a child swapped
 * after construction (a LoRA adapter, an FSDP unit) takes effect.
 */
public abstract class HfBlock extends AbstractBlock {

    private final Map<String, Integer> positions = new HashMap<>();

    /**
     * Returns whether the block is initialized, as DJL's check decides it (input shapes set, every
     * parameter of the subtree initialized), without the list of the subtree's named parameters
     * that DJL's check builds, names concatenated level by level, on every training call.
     *
     * @return whether the block is initialized
     */
    @Override
    public boolean isInitialized() {
        return inputShapes != null && parametersInitialized(this);
    }

    private static boolean parametersInitialized(Block block) {
        if (!(block instanceof HfBlock hf)) {
            return block.getParameters().values().stream().allMatch(Parameter::isInitialized);
        }
        for (Parameter parameter : hf.parameters.values()) {
            if (!parameter.isInitialized()) {
                return false;
            }
        }
        for (Block child : hf.children.values()) {
            if (!parametersInitialized(child)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Adds a child under its module attribute name.
     *
     * @param name the attribute name, such as {@code c_attn}
     * @param block the child
     * @param <B> the child's type
     * @return the child
     */
    protected final <B extends Block> B addChild(String name, B block) {
        positions.put(name, children.size());
        return addChildBlock(name, block);
    }

    /**
     * Adds a parameter of a fixed shape.
     *
     * @param name the attribute name, such as {@code weight}
     * @param shape the shape
     * @param initializer how a fresh model fills it
     * @return the parameter
     */
    protected final Parameter addParameter(String name, Shape shape, Initializer initializer) {
        return addParameter(
                Parameter.builder()
                        .setName(name)
                        .setType(name.equals("bias") ? Parameter.Type.BIAS : Parameter.Type.WEIGHT)
                        .optShape(shape)
                        .optInitializer(initializer)
                        .build());
    }

    /**
     * Returns the current child of a name.
     *
     * @param name the attribute name
     * @return the child
     */
    protected final Block child(String name) {
        return children.valueAt(position(name));
    }

    private int position(String name) {
        Integer position = positions.get(name);
        if (position == null) {
            throw new IllegalArgumentException(
                    getClass().getSimpleName() + " has no child named " + name);
        }
        return position;
    }

    /**
     * Calls a single-input, single-output child.
     *
     * @param name the child's name
     * @param ps the parameter store
     * @param x the input
     * @param training whether this is a training pass
     * @return the output
     */
    protected final NDArray call(String name, ParameterStore ps, NDArray x, boolean training) {
        return child(name).forward(ps, new NDList(x), training).singletonOrThrow();
    }

    /**
     * Initializes every child. Parameters have fixed shapes, so the input shapes are only recorded,
     * never used to infer anything.
     */
    @Override
    protected void initializeChildBlocks(
            NDManager manager, DataType dataType, Shape... inputShapes) {
        for (Block child : children.values()) {
            child.initialize(manager, dataType, inputShapes);
        }
    }

    /**
     * Returns the input shapes: the zoo's blocks map {@code [B, T, C]} hidden states to the same
     * shape unless they say otherwise.
     */
    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        return new Shape[] {inputShapes[0]};
    }

    /**
     * Looks up a parameter's value for this pass.
     *
     * @param ps the parameter store
     * @param parameter the parameter
     * @param like an array on the device to use
     * @param training whether this is a training pass
     * @return the value
     */
    protected static NDArray value(
            ParameterStore ps, Parameter parameter, NDArray like, boolean training) {
        return ps.getValue(parameter, like.getDevice(), training);
    }
}
