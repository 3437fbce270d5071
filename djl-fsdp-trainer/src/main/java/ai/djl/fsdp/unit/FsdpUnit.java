package ai.djl.fsdp.unit;

import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.dist.Work;
import ai.djl.fsdp.param.FlatParameter;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One FSDP unit: a block and its flat parameters (at most one trainable and one frozen), gathered
 * together, computed together and resharded together. The root unit holds the parameters outside
 * every other unit.
 */
public final class FsdpUnit implements AutoCloseable {

    private final int index;
    private final String name;
    private final Block block;
    private final List<FlatParameter> flatParameters;
    private final Map<String, NDArray> views = new HashMap<>();

    FsdpUnit(int index, String name, Block block, List<FlatParameter> flatParameters) {
        this.index = index;
        this.name = name;
        this.block = block;
        this.flatParameters = List.copyOf(flatParameters);
    }

    /** Returns the unit's position: 0 for the root, then the wrap planner's order. */
    public int getIndex() {
        return index;
    }

    /** Returns the unit's name, the block's path in the model. */
    public String getName() {
        return name;
    }

    /** Returns the wrapped block (the model's top block for the root unit). */
    public Block getBlock() {
        return block;
    }

    /** Returns the unit's flat parameters. */
    public List<FlatParameter> getFlatParameters() {
        return flatParameters;
    }

    /** Returns the unit's parameters, in the order of its flat parameters. */
    public List<Parameter> getParameters() {
        List<Parameter> parameters = new ArrayList<>();
        flatParameters.forEach(flat -> parameters.addAll(flat.getParameters()));
        return parameters;
    }

    /** Gives the unit's parameters copies of their full arrays (a collective when sharded). */
    void restoreParameterArrays(ProcessGroup group) {
        flatParameters.forEach(flat -> flat.restoreParameterArrays(group));
    }

    /** Frees the arrays {@link #restoreParameterArrays} gave the parameters. */
    void releaseParameterArrays() {
        flatParameters.forEach(FlatParameter::releaseParameterArrays);
    }

    void startGather(ProcessGroup group) {
        flatParameters.forEach(flat -> flat.startGather(group));
    }

    void awaitGather() {
        flatParameters.forEach(FlatParameter::awaitGather);
    }

    void reshard() {
        views.clear();
        flatParameters.forEach(FlatParameter::reshard);
    }

    /**
     * Makes the parameters readable through the parameter store: views into the gathered buffers,
     * owned by {@code scope}. With {@code withGrad}, each trainable buffer is first aliased by a
     * fresh autograd leaf (sharing its storage) so one backward leaves the whole flat gradient on
     * that leaf.
     *
     * @return the leaves, one per flat parameter, null for frozen ones or without grad
     */
    List<NDArray> materialize(boolean withGrad, NDManager scope) {
        List<NDArray> leaves = new ArrayList<>(flatParameters.size());
        for (FlatParameter flat : flatParameters) {
            NDArray alias = flat.getFull().stopGradient();
            alias.attach(scope);
            boolean leaf = withGrad && flat.isTrainable();
            if (leaf) {
                alias.setRequiresGradient(true);
            }
            leaves.add(leaf ? alias : null);
            List<NDArray> parameterViews = flat.viewsOf(alias);
            for (int i = 0; i < parameterViews.size(); i++) {
                views.put(flat.getParameters().get(i).getId(), parameterViews.get(i));
            }
        }
        return leaves;
    }

    /** Ends the parameters' visibility through the store (their views stay alive in the graph). */
    void clearViews() {
        views.clear();
    }

    /** Returns the current view of {@code parameter}, or null when the unit is not materialized. */
    NDArray viewOf(Parameter parameter) {
        return views.get(parameter.getId());
    }

    /**
     * Starts reducing the gradients that backward left on {@code leaves} over the ranks (mean): a
     * reduce-scatter into this rank's piece, or an all-reduce when the buffer is not split.
     *
     * @return what completes the reduction: waits for it and adds this rank's part, times {@code
     *     scale}, to the shards' gradients. Until then the gradients must stay alive.
     */
    Runnable startGradientReduction(List<NDArray> leaves, ProcessGroup group, float scale) {
        List<Runnable> completions = new ArrayList<>(flatParameters.size());
        for (int i = 0; i < flatParameters.size(); i++) {
            NDArray leaf = leaves.get(i);
            if (leaf == null) {
                continue;
            }
            FlatParameter flat = flatParameters.get(i);
            NDArray found = Gradients.of(leaf);
            // Every rank must take part in the collective even if its micro-batch did not reach
            // these parameters.
            NDArray gradient = found != null ? found : leaf.zerosLike();
            if (flat.isSharded()) {
                NDArray shardGradient =
                        gradient.getManager()
                                .create(flat.getShard().getShape(), flat.getShard().getDataType());
                Work work = group.reduceScatterAsync(gradient, shardGradient, ReduceOp.AVG);
                completions.add(
                        () -> {
                            work.await();
                            flat.accumulateGradient(shardGradient, scale);
                        });
            } else if (group.size() > 1) {
                Work work = group.allReduceAsync(gradient, ReduceOp.AVG);
                completions.add(
                        () -> {
                            work.await();
                            flat.accumulateGradient(gradient, scale);
                        });
            } else {
                completions.add(() -> flat.accumulateGradient(gradient, scale));
            }
        }
        return () -> completions.forEach(Runnable::run);
    }

    @Override
    public void close() {
        views.clear();
        flatParameters.forEach(FlatParameter::close);
    }
}
