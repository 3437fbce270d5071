package ai.djl.fsdp.internal.runtime;

import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.nn.Parameter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The model's buffers (see {@link ai.djl.fsdp.wrap.UnitPlan#isBuffer}): state its blocks update
 * themselves in a training forward, such as DJL's {@code BatchNorm}'s running mean and variance.
 * They are small and not sharded: every rank keeps each buffer's whole array as the parameter's
 * own, in every strategy, and blocks update it in place.
 *
 * <ul>
 *   <li>Once per micro-batch: a unit recomputed in backward reads scratch copies ({@link
 *       #withScratchCopies}), or its batch would be counted twice, as PyTorch's activation
 *       checkpointing counts it for BatchNorm.
 *   <li>The same on every rank: rank 0's are broadcast when the model is sharded, and after every
 *       optimizer step the ranks' buffers are averaged ({@link #average}). Averaging rather than
 *       DDP's broadcast of rank 0's: a running mean is an exponential average of batch means,
 *       linear in them, so the ranks' average after a step is the running mean one process computes
 *       over the global batch (the ranks' slices are of equal size); the running variance misses
 *       only the spread of the ranks' batch means. Rank 0's alone would reflect half of the data.
 * </ul>
 */
public final class ModelBuffers {

    private final Map<String, Parameter> byId = new LinkedHashMap<>();
    private final Precision precision;
    private final Map<Parameter, NDArray> narrowCopies = new LinkedHashMap<>();
    private NDManager narrowScope;
    private NDManager scratch;

    /**
     * Collects the buffers of {@code units}.
     *
     * @param units the model's units
     * @param precision the type blocks compute in: a narrower one gets copies of that type, whose
     *     updates are written back at the end of the forward pass ({@link #endForward})
     */
    public ModelBuffers(List<FsdpUnit> units, Precision precision) {
        this.precision = precision;
        units.forEach(unit -> unit.getBuffers().forEach(b -> byId.put(b.getId(), b)));
    }

    /** Returns the buffers, in unit order. */
    public List<Parameter> getBuffers() {
        return List.copyOf(byId.values());
    }

    /** Returns whether {@code parameter} is one of the buffers. */
    boolean contains(Parameter parameter) {
        return byId.containsKey(parameter.getId());
    }

    /**
     * Returns the array a block reads and updates for {@code buffer}: its own, or a scratch copy
     * while a recompute runs.
     */
    NDArray valueOf(Parameter buffer) {
        NDArray array = buffer.getArray();
        NDArray typed = precision.cast(array);
        if (scratch != null) {
            NDArray copy = typed == array ? array.duplicate() : typed;
            copy.attach(scratch);
            return copy;
        }
        if (typed == array) {
            return array;
        }
        NDArray copy = narrowCopies.get(buffer);
        if (copy != null) {
            typed.close();
            return copy;
        }
        if (narrowScope == null) {
            narrowScope = array.getManager().newSubManager();
        }
        typed.attach(narrowScope);
        narrowCopies.put(buffer, typed);
        return typed;
    }

    /** Ends a forward pass: what blocks wrote into narrower copies goes into the buffers. */
    public void endForward() {
        if (narrowScope == null) {
            return;
        }
        try {
            narrowCopies.forEach(
                    (buffer, copy) -> {
                        NDArray array = buffer.getArray();
                        NDArray wide = Precision.cast(copy, array.getDataType());
                        wide.attach(narrowScope);
                        array.set(new NDIndex("..."), wide);
                    });
        } finally {
            narrowCopies.clear();
            narrowScope.close();
            narrowScope = null;
        }
    }

    /**
     * Runs {@code pass} with blocks reading copies of the buffers made in {@code scope}: what the
     * pass writes into them is dropped.
     */
    <T> T withScratchCopies(NDManager scope, Supplier<T> pass) {
        scratch = scope;
        try {
            return pass.get();
        } finally {
            scratch = null;
        }
    }

    /** Replaces every rank's buffers by the ranks' mean (a collective). */
    public void average(ProcessGroup group) {
        if (group.getSize() > 1) {
            forEachPacked(group, packed -> group.allReduce(packed, ReduceOp.AVG));
        }
    }

    /** Replaces every rank's buffers by {@code root}'s (a collective). */
    public void broadcast(ProcessGroup group, int root) {
        if (group.getSize() > 1) {
            forEachPacked(group, packed -> group.broadcast(packed, root));
        }
    }

    /**
     * Packs the buffers of each element type into one array, runs {@code collective} on it and
     * copies the result back: one collective per type, not one per buffer.
     */
    private void forEachPacked(ProcessGroup group, Consumer<NDArray> collective) {
        Map<DataType, List<NDArray>> byType = new LinkedHashMap<>();
        for (Parameter buffer : byId.values()) {
            NDArray array = buffer.getArray();
            byType.computeIfAbsent(array.getDataType(), type -> new ArrayList<>()).add(array);
        }
        for (List<NDArray> arrays : byType.values()) {
            try (NDManager scope = arrays.get(0).getManager().newSubManager(group.getDevice())) {
                NDList flat = new NDList(arrays.size());
                for (NDArray array : arrays) {
                    NDArray piece = array.toDevice(group.getDevice(), true).flatten();
                    piece.attach(scope);
                    flat.add(piece);
                }
                NDArray packed = NDArrays.concat(flat);
                packed.attach(scope);
                collective.accept(packed);
                long offset = 0;
                for (NDArray array : arrays) {
                    long size = array.size();
                    NDArray piece = packed.get(new NDIndex("{}:{}", offset, offset + size));
                    piece.attach(scope);
                    NDArray value =
                            piece.reshape(array.getShape()).toDevice(array.getDevice(), false);
                    value.attach(scope);
                    array.set(new NDIndex("..."), value);
                    offset += size;
                }
            }
        }
    }
}
