package ai.djl.fsdp.internal.runtime;

import ai.djl.fsdp.checkpoint.GatheredUnit;
import ai.djl.fsdp.checkpoint.UnitVisitor;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.dist.ShardingMesh;
import ai.djl.fsdp.dist.Work;
import ai.djl.fsdp.dist.quant.QuantizedCollectives;
import ai.djl.fsdp.internal.config.CollectiveQuantizers;
import ai.djl.fsdp.internal.config.ExecutionOptions;
import ai.djl.fsdp.internal.param.FlatParameter;
import ai.djl.fsdp.reflect.ParameterArrays;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.quant.SymmetricQuantizer;
import ai.djl.fsdp.util.Failures;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import java.io.IOException;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The one place where the runtime's collectives start and complete: a unit's parameter gather, its
 * gradient reduction, putting whole parameters back into the model, and a synchronized BatchNorm's
 * statistics and gradient sums. Gathers and reduce-scatters run in the mesh's shard group; under
 * hybrid sharding each reduced gradient shard is then averaged across the replicate group, queued
 * behind its reduce-scatter (quantized when the options say so: the traffic between nodes). A
 * synchronized BatchNorm's collectives span all ranks.
 */
public final class Collectives {

    private final ProcessGroup world;
    private final ProcessGroup shardGroup;
    private final ProcessGroup replicateGroup;
    private final QuantizedCollectives weightGather;
    private final QuantizedCollectives gradientReduction;
    private final QuantizedCollectives replicaReduction;
    private final Map<FlatParameter, NDArray> residuals;

    /**
     * Creates the collectives of a model sharded over {@code group}.
     *
     * @param group the ranks
     */
    public Collectives(ProcessGroup group) {
        this(ShardingMesh.flat(group), CollectiveQuantizers.NONE);
    }

    /**
     * Creates the collectives of a model sharded over the shard groups of {@code mesh}, replicated
     * across its replicate groups, quantized as {@code options} say.
     *
     * @param mesh the ranks
     * @param options the quantizers of weights, gradients and replicas (null ones are exact)
     */
    public Collectives(ShardingMesh mesh, ExecutionOptions options) {
        this(mesh, options.quantizers());
    }

    private Collectives(ShardingMesh mesh, CollectiveQuantizers quantizers) {
        this.world = mesh.getWorld();
        this.shardGroup = mesh.getShardGroup();
        this.replicateGroup = mesh.getReplicateGroup().orElse(null);
        weightGather = quantized(quantizers.weights());
        gradientReduction = quantized(quantizers.gradients());
        replicaReduction = quantized(quantizers.replicas());
        residuals = quantizers.errorFeedback() ? new IdentityHashMap<>() : null;
    }

    private static QuantizedCollectives quantized(SymmetricQuantizer quantizer) {
        return quantizer == null ? null : new QuantizedCollectives(quantizer);
    }

    /** Returns every rank of the job. */
    public ProcessGroup getGroup() {
        return world;
    }

    /**
     * Starts gathering {@code unit}'s full buffers unless they are gathered or on their way; a
     * released unit is gathered into the same addresses (the collective writes the memory itself,
     * so graphs that saved views of it read the values without autograd seeing a change).
     *
     * @param unit the unit
     * @param type the type the unit computes in: shards are cast to it first
     */
    void startGather(FsdpUnit unit, Precision type) {
        startGather(unit, flat -> type, weightGather);
    }

    /**
     * Starts gathering each flat parameter of {@code unit} in its type: shards are cast first, and
     * trainable ones sent quantized by {@code quantized} unless it is null.
     */
    private void startGather(
            FsdpUnit unit,
            Function<FlatParameter, Precision> types,
            QuantizedCollectives quantized) {
        UnitState state = unit.getState();
        if (state != UnitState.RESHARDED && state != UnitState.RELEASED) {
            return;
        }
        List<Work> works = new ArrayList<>(unit.getFlatParameters().size());
        try {
            for (FlatParameter flat : unit.getFlatParameters()) {
                Precision type = types.apply(flat);
                // The full buffer first: the cast shard is kept until the gather is done.
                // A staged buffer that is not split gets a copy of the shard as its full buffer.
                NDArray full = flat.allocateFull(type, unit.isReleasable());
                if (flat.isSharded()) {
                    NDArray shard = flat.shardIn(type);
                    works.add(
                            quantized != null && flat.isTrainable()
                                    ? quantized.allGatherAsync(shardGroup, shard, full)
                                    : shardGroup.allGatherAsync(shard, full));
                }
            }
        } catch (RuntimeException | Error e) {
            // The gathers queued already write buffers a later free would unmap.
            Failures.forEachAfter(e, works, Work::await);
            throw e;
        }
        unit.gatherStarted(new PendingGather(works));
    }

    /**
     * Starts reducing the gradients backward left on {@code leaves} over the ranks (mean): a
     * reduce-scatter into this rank's piece, or an all-reduce when the buffer is not split. Every
     * rank takes part even if its micro-batch did not reach these parameters.
     *
     * @param unit the unit
     * @param leaves the unit's parameter leaves per flat parameter, null for frozen buffers
     * @param type the type gradients are reduced in
     * @param scale the factor for this micro-batch's gradients
     * @param scope the manager of the flat gradients and the reductions' outputs
     * @return the reduction in flight; {@code scope} must stay open until it completes
     * @throws RuntimeException if a reduction fails to start, once those started have completed
     */
    PendingReduction startReduction(
            FsdpUnit unit,
            List<GradientLeaves> leaves,
            Precision type,
            float scale,
            NDManager scope) {
        List<PendingReduction.Part> parts = new ArrayList<>();
        try {
            startReductions(unit.getFlatParameters(), leaves, type, scope, parts);
        } catch (RuntimeException | Error e) {
            // The reductions queued already read gradients the caller frees next.
            PendingReduction.awaitAfter(e, parts);
            throw e;
        }
        return new PendingReduction(parts, scale);
    }

    /** Starts the reduction of each flat parameter with leaves, adding each to {@code parts}. */
    private void startReductions(
            List<FlatParameter> flats,
            List<GradientLeaves> leaves,
            Precision type,
            NDManager scope,
            List<PendingReduction.Part> parts) {
        for (int i = 0; i < flats.size(); i++) {
            GradientLeaves flatLeaves = leaves.get(i);
            if (flatLeaves == null) {
                continue;
            }
            FlatParameter flat = flats.get(i);
            NDArray gradient = flatLeaves.flatGradient(type, scope);
            if (flat.isSharded()) {
                NDArray shardGradient = type.empty(scope, flat.getShard().getShape());
                Work work =
                        gradientReduction != null
                                ? gradientReduction.reduceScatterAsync(
                                        shardGroup,
                                        gradient,
                                        shardGradient,
                                        ReduceOp.AVG,
                                        residual(flat, gradient))
                                : shardGroup.reduceScatterAsync(
                                        gradient, shardGradient, ReduceOp.AVG);
                parts.add(
                        new PendingReduction.Part(
                                flat, acrossReplicas(shardGradient, work), shardGradient));
            } else {
                Work work =
                        shardGroup.getSize() > 1
                                ? shardGroup.allReduceAsync(gradient, ReduceOp.AVG)
                                : null;
                parts.add(
                        new PendingReduction.Part(flat, acrossReplicas(gradient, work), gradient));
            }
        }
    }

    /**
     * Returns the error feedback residual of {@code flat}'s gradient (zeros at first, on the
     * gradient's device, kept with the shard), or null without error feedback.
     */
    private NDArray residual(FlatParameter flat, NDArray gradient) {
        if (residuals == null) {
            return null;
        }
        return residuals.computeIfAbsent(
                flat,
                f ->
                        f.getShard()
                                .getManager()
                                .zeros(
                                        new Shape(gradient.size()),
                                        DataType.FLOAT32,
                                        gradient.getDevice()));
    }

    /**
     * Averages {@code reduced} across the replicate group once {@code before} (its reduction in the
     * shard group, or null) is done, quantized if asked (it then starts when awaited: every rank
     * completes its reductions in the same order); returns the work that completes last, null if
     * none.
     */
    private Work acrossReplicas(NDArray reduced, Work before) {
        if (replicateGroup == null) {
            return before;
        }
        if (replicaReduction != null) {
            return replicaReduction.allReduceAsync(replicateGroup, reduced, ReduceOp.AVG, before);
        }
        return before == null
                ? replicateGroup.allReduceAsync(reduced, ReduceOp.AVG)
                : replicateGroup.allReduceAsync(reduced, ReduceOp.AVG, before);
    }

    /**
     * Gathers every rank's {@code moments} (a synchronized BatchNorm's per-channel statistics of
     * its slice), one rank's after the other.
     *
     * @param moments this rank's 1-D array, the same size on every rank
     * @return the ranks' arrays, concatenated in rank order, in the manager of {@code moments}
     */
    NDArray gatherStatistics(NDArray moments) {
        NDArray gathered =
                moments.getManager()
                        .create(new Shape(moments.size() * world.getSize()), moments.getDataType());
        world.allGather(moments, gathered);
        return gathered;
    }

    /**
     * Sums {@code sums} (a synchronized BatchNorm's per-channel gradient sums) over the ranks, in
     * place.
     *
     * @param sums this rank's 1-D array, the same size on every rank
     */
    void sumOverRanks(NDArray sums) {
        world.allReduce(sums, ReduceOp.SUM);
    }

    /**
     * Gives {@code unit}'s parameters copies of their full arrays, as before sharding (a collective
     * when sharded). The unit is resharded afterwards.
     *
     * @param unit the unit
     */
    void restoreParameterArrays(FsdpUnit unit) {
        // The parameters' own type: a unit is written or restored as its master copy is typed.
        startGather(unit, flat -> Precision.FLOAT32, null);
        unit.awaitGather();
        try {
            for (FlatParameter flat : unit.getFlatParameters()) {
                List<NDArray> views = flat.getLayout().viewsOf(flat.getFull());
                for (int i = 0; i < views.size(); i++) {
                    Parameter parameter = flat.getParameters().get(i);
                    // A frozen shard stored narrower is handed out in the parameters' type.
                    NDArray view = views.get(i);
                    NDArray array = Precision.cast(view, flat.getDataType());
                    if (array == view) {
                        array = view.duplicate();
                    }
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
     * Gathers {@code unit} and runs {@code visitor} while its parameters hold views into the
     * gathered buffers (a collective when sharded): the unit's values exist once on this rank, in
     * the type each shard is stored in (a frozen base kept in bfloat16 is handed out in bfloat16,
     * half the bytes of its float32 parameters), not twice. A buffer that is not gathered (this
     * rank's shard is all of it) is handed out as a copy, so the visitor never changes a shard.
     * Afterwards the parameters hold empty placeholders of their own type again and the unit is
     * resharded.
     *
     * @param unit the unit
     * @param visitor what runs on it
     * @throws IOException if the visitor throws it
     */
    void visitGathered(FsdpUnit unit, UnitVisitor visitor) throws IOException {
        startGather(unit, flat -> Precision.ofArray(flat.getShard()), null);
        Map<Parameter, NDArray> placeholders = new IdentityHashMap<>();
        try {
            unit.awaitGather();
            for (FlatParameter flat : unit.getFlatParameters()) {
                List<NDArray> views = flat.getLayout().viewsOf(flat.getFull());
                for (int i = 0; i < views.size(); i++) {
                    Parameter parameter = flat.getParameters().get(i);
                    NDArray view = views.get(i);
                    NDArray placeholder = parameter.getArray();
                    NDArray array = flat.needsGather() ? view : view.duplicate();
                    placeholders.put(
                            parameter,
                            placeholder
                                    .getManager()
                                    .create(new Shape(0), placeholder.getDataType()));
                    ParameterArrays.replace(parameter, array);
                }
            }
            List<Parameter> whole = new ArrayList<>(unit.getParameters());
            whole.addAll(unit.getBuffers());
            visitor.visit(new GatheredUnit(unit.getName(), whole));
        } finally {
            placeholders.forEach(ParameterArrays::replace);
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
        unit.getParameters().forEach(ParameterArrays::release);
    }
}
