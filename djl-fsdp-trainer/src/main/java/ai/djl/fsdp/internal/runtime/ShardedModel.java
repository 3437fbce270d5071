package ai.djl.fsdp.internal.runtime;

import ai.djl.fsdp.checkpoint.UnitVisitor;
import ai.djl.fsdp.internal.config.ExecutionOptions;
import ai.djl.fsdp.internal.param.FlatParameter;
import ai.djl.fsdp.reflect.BlockChildren;
import ai.djl.ndarray.NDArray;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.nn.norm.BatchNorm;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A model whose parameters live as FSDP units' shards: the units (root first), which unit owns each
 * parameter, the stand-ins that run each unit's block through its {@link UnitLifecycle}, the {@link
 * ShardedPasses} over them, whole parameters back, one unit gathered at a time, close.
 */
public final class ShardedModel implements AutoCloseable {

    private final Collectives collectives;
    private final List<FsdpUnit> units;
    private final Map<String, FsdpUnit> ownerByParameterId = new HashMap<>();
    private final ShardedPasses passes;
    private final ModelBuffers buffers;
    private final List<BlockChildren> standIns = new ArrayList<>();

    /**
     * Puts {@code units} in charge of their parameters: each non-root unit's block is replaced in
     * its parent by a stand-in that runs it through its lifecycle, and every sharded parameter's
     * own array is freed, so the shards are the only copy; the buffers keep theirs, made rank 0's
     * on every rank (see {@link ModelBuffers}).
     *
     * @param collectives the ranks' collectives
     * @param units the units, the root first (its block the model's top block)
     * @param options how passes are scheduled
     * @param syncBatchNorm whether every DJL {@code BatchNorm} normalizes with the global batch's
     *     statistics ({@link SyncBatchNorm} stands in for it)
     */
    public ShardedModel(
            Collectives collectives,
            List<FsdpUnit> units,
            ExecutionOptions options,
            boolean syncBatchNorm) {
        options.checkDevice(
                collectives.getGroup().getDevice(),
                units.stream().anyMatch(unit -> !unit.isRoot() && !unit.isRecomputed()));
        this.collectives = collectives;
        this.units = List.copyOf(units);
        buffers = new ModelBuffers(this.units, options.computeType());
        passes = new ShardedPasses(collectives, options, this.units, buffers);
        for (FsdpUnit unit : this.units) {
            unit.getParameters().forEach(p -> ownerByParameterId.put(p.getId(), unit));
        }
        try {
            for (UnitLifecycle unit : passes.getUnits()) {
                standIns.add(
                        BlockChildren.replace(
                                unit.unit().getParents(),
                                unit.unit().getBlock(),
                                new UnitBlock(unit, passes)));
            }
            if (syncBatchNorm) {
                synchronizeBatchNorms(this.units.get(0).getBlock());
            }
        } catch (RuntimeException e) {
            restoreBlockTree();
            throw e;
        }
        releaseParameterArrays();
        buffers.broadcast(collectives.getGroup(), 0);
    }

    /** Puts a {@link SyncBatchNorm} in the place of every DJL BatchNorm under {@code parent}. */
    private void synchronizeBatchNorms(Block parent) {
        Block holder = parent instanceof DelegatingBlock standIn ? standIn.inner() : parent;
        for (Block child : parent.getChildren().values()) {
            Block block = child instanceof UnitBlock unit ? unit.inner() : child;
            if (block instanceof BatchNorm norm) {
                if (block.getClass() != BatchNorm.class || block != child) {
                    throw new IllegalArgumentException(
                            "Synchronized batch statistics replace DJL's own BatchNorm blocks"
                                    + " inside the units or the root, but "
                                    + block.getClass().getName()
                                    + (block != child
                                            ? " is a unit: choose a wrap policy that puts it"
                                                    + " inside one"
                                            : " extends it: turn optSyncBatchNorm off"));
                }
                standIns.add(
                        BlockChildren.replace(
                                holder, norm, new SyncBatchNorm(norm, collectives, passes)));
            } else {
                synchronizeBatchNorms(child);
            }
        }
    }

    /** Returns the units, root first. */
    public List<FsdpUnit> getUnits() {
        return units;
    }

    /** Returns the model's buffers, whole on every rank. */
    public ModelBuffers getBuffers() {
        return buffers;
    }

    /** Returns every flat parameter, the root's first. */
    public List<FlatParameter> getFlatParameters() {
        List<FlatParameter> flats = new ArrayList<>();
        units.forEach(unit -> flats.addAll(unit.getFlatParameters()));
        return flats;
    }

    /** Returns the passes over the model: forward, backward and the end of a step. */
    public ShardedPasses getPasses() {
        return passes;
    }

    /**
     * Returns the array a block should compute with for {@code parameter}.
     *
     * @param parameter a parameter of the model
     * @return its view in the gathered buffer
     */
    public NDArray valueOf(Parameter parameter) {
        if (buffers.contains(parameter)) {
            return buffers.valueOf(parameter);
        }
        FsdpUnit owner = ownerByParameterId.get(parameter.getId());
        if (owner == null) {
            throw new IllegalArgumentException(
                    "Parameter " + parameter.getName() + " is not part of the FSDP model");
        }
        NDArray view = owner.viewOf(parameter);
        if (view == null) {
            throw new IllegalStateException(
                    "Parameter "
                            + parameter.getName()
                            + " of FSDP unit "
                            + owner.getName()
                            + " is read outside that unit's forward, when it is not gathered."
                            + " A parameter used by several blocks must live in the root: choose"
                            + " a wrap policy that leaves its users out of the units.");
        }
        return view;
    }

    /**
     * Gives every parameter its full array again and takes the stand-ins out of the block tree: the
     * model is an ordinary DJL model once more. Every rank must call it.
     */
    public void unshard() {
        restoreBlockTree();
        gatherParameterArrays();
    }

    /**
     * Takes the stand-ins out of the block tree without gathering: the parameters keep their empty
     * arrays (for a job whose model was saved unit by unit and is not used whole again).
     */
    public void restoreBlockTree() {
        passes.discardPass();
        for (int i = standIns.size() - 1; i >= 0; i--) {
            standIns.get(i).restore();
        }
        standIns.clear();
    }

    /** Gives every parameter a copy of its full array (a collective: every rank calls it). */
    public void gatherParameterArrays() {
        units.forEach(collectives::restoreParameterArrays);
    }

    /** Frees the arrays {@link #gatherParameterArrays()} gave the parameters. */
    public void releaseParameterArrays() {
        units.forEach(Collectives::releaseParameterArrays);
    }

    /**
     * Runs {@code visitor} on every unit in turn, the root last, with that unit's parameters
     * holding their full arrays and every other unit's empty: a rank holds one unit's parameters at
     * a time, never the whole model. A collective: every rank calls it, and every rank's visitor
     * must return or throw alike, or the other ranks wait on the next unit's gather.
     *
     * @param visitor what to run on each unit
     * @throws IOException if the visitor throws it; the unit's arrays are freed first
     */
    public void forEachUnitGathered(UnitVisitor visitor) throws IOException {
        passes.discardPass();
        List<FsdpUnit> order = new ArrayList<>(units.subList(1, units.size()));
        order.add(units.get(0));
        for (FsdpUnit unit : order) {
            collectives.visitGathered(unit, visitor);
        }
    }

    @Override
    public void close() {
        passes.discardPass();
        units.forEach(FsdpUnit::close);
    }
}
