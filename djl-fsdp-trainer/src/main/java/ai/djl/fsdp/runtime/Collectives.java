package ai.djl.fsdp.runtime;

import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.dist.Work;
import ai.djl.fsdp.param.FlatParameter;
import ai.djl.fsdp.tensor.Autograd;
import ai.djl.fsdp.tensor.ParameterArrays;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import java.util.ArrayList;
import java.util.List;

/**
 * The one place where the runtime's collectives start and complete: a unit's parameter gather, its
 * gradient reduction, and putting whole parameters back into the model.
 */
public final class Collectives {

    private final ProcessGroup group;

    /**
     * Creates the collectives of a model sharded over {@code group}.
     *
     * @param group the ranks
     */
    public Collectives(ProcessGroup group) {
        this.group = group;
    }

    /** Returns the ranks. */
    public ProcessGroup getGroup() {
        return group;
    }

    /**
     * Starts gathering {@code unit}'s full buffers unless they are gathered or on their way; a
     * released unit is gathered into the same addresses (the collective writes the memory itself,
     * so graphs that saved views of it read the values without autograd seeing a change).
     *
     * @param unit the unit
     */
    void startGather(FsdpUnit unit) {
        UnitState state = unit.getState();
        if (state != UnitState.RESHARDED && state != UnitState.RELEASED) {
            return;
        }
        List<Work> works = new ArrayList<>(unit.getFlatParameters().size());
        for (FlatParameter flat : unit.getFlatParameters()) {
            works.add(
                    group.allGatherAsync(flat.getShard(), flat.allocateFull(unit.isReleasable())));
        }
        unit.gatherStarted(new PendingGather(works));
    }

    /**
     * Gathers {@code unit} and waits until it is whole.
     *
     * @param unit the unit
     */
    void gather(FsdpUnit unit) {
        startGather(unit);
        unit.awaitGather();
    }

    /**
     * Starts reducing the gradients backward left on {@code leaves} over the ranks (mean): a
     * reduce-scatter into this rank's piece, or an all-reduce when the buffer is not split. Every
     * rank takes part even if its micro-batch did not reach these parameters.
     *
     * @param unit the unit
     * @param leaves the unit's flat leaves, null for frozen buffers
     * @param scale the factor for this micro-batch's gradients
     * @return the reduction in flight; the gradients must stay alive until it completes
     */
    PendingReduction startReduction(FsdpUnit unit, List<NDArray> leaves, float scale) {
        List<PendingReduction.Part> parts = new ArrayList<>();
        List<FlatParameter> flats = unit.getFlatParameters();
        for (int i = 0; i < flats.size(); i++) {
            NDArray leaf = leaves.get(i);
            if (leaf == null) {
                continue;
            }
            FlatParameter flat = flats.get(i);
            NDArray found = Autograd.gradientOf(leaf);
            NDArray gradient = found != null ? found : leaf.zerosLike();
            if (flat.isSharded()) {
                NDArray shardGradient =
                        gradient.getManager()
                                .create(flat.getShard().getShape(), flat.getShard().getDataType());
                Work work = group.reduceScatterAsync(gradient, shardGradient, ReduceOp.AVG);
                parts.add(new PendingReduction.Part(flat, work, shardGradient));
            } else if (group.size() > 1) {
                parts.add(
                        new PendingReduction.Part(
                                flat, group.allReduceAsync(gradient, ReduceOp.AVG), gradient));
            } else {
                parts.add(new PendingReduction.Part(flat, null, gradient));
            }
        }
        return new PendingReduction(parts, scale);
    }

    /**
     * Gives {@code unit}'s parameters copies of their full arrays, as before sharding (a collective
     * when sharded). The unit is resharded afterwards.
     *
     * @param unit the unit
     */
    void restoreParameterArrays(FsdpUnit unit) {
        gather(unit);
        try {
            for (FlatParameter flat : unit.getFlatParameters()) {
                List<NDArray> views = flat.viewsOf(flat.getFull());
                for (int i = 0; i < views.size(); i++) {
                    Parameter parameter = flat.getParameters().get(i);
                    NDArray array = views.get(i).duplicate();
                    array.attach(parameter.getArray().getManager());
                    if (flat.isTrainable()) {
                        array.setRequiresGradient(true);
                    }
                    ParameterArrays.replace(parameter, array);
                }
            }
        } finally {
            unit.reshard();
        }
    }

    /**
     * Frees {@code unit}'s parameters' own full arrays, leaving each an empty placeholder of its
     * type: the shards are then the only copy.
     *
     * @param unit the unit
     */
    static void releaseParameterArrays(FsdpUnit unit) {
        for (Parameter parameter : unit.getParameters()) {
            NDArray array = parameter.getArray();
            ParameterArrays.replace(
                    parameter, array.getManager().create(new Shape(0), array.getDataType()));
        }
    }
}
