package ai.djl.fsdp.internal.runtime;

import ai.djl.fsdp.internal.param.FlatParameter;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.util.Failures;
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
 * together, computed together and resharded together; its {@link UnitState} says where its
 * parameters are. The root unit holds the parameters outside every other unit.
 */
public final class FsdpUnit implements AutoCloseable {

    private final int index;
    private final String name;
    private final Block block;
    private final List<Block> parents;
    private final List<FlatParameter> flatParameters;
    private final List<Parameter> buffers;
    private final boolean recomputed;
    private final Map<String, NDArray> views = new HashMap<>();
    private UnitState state = UnitState.RESHARDED;
    private PendingGather pendingGather;
    private boolean releasable;
    private boolean heldByGraph;

    /**
     * Creates a unit.
     *
     * @param index its position: 0 for the root, then forward order
     * @param name its dotted path in the model, {@code root} for the root
     * @param block the block it runs
     * @param parents the blocks that hold it as a child (several for a block the model shares),
     *     none for the root
     * @param flatParameters its flat parameters
     * @param buffers its buffers, whole on every rank (see {@link ModelBuffers})
     * @param recomputed whether a training forward keeps no graph and backward recomputes the unit
     *     (activation checkpointing); false for the root
     */
    public FsdpUnit(
            int index,
            String name,
            Block block,
            List<Block> parents,
            List<FlatParameter> flatParameters,
            List<Parameter> buffers,
            boolean recomputed) {
        if (index == 0 && recomputed) {
            throw new IllegalArgumentException(
                    "the root unit is gathered for the whole pass and never recomputed");
        }
        this.index = index;
        this.name = name;
        this.block = block;
        this.parents = List.copyOf(parents);
        this.flatParameters = List.copyOf(flatParameters);
        this.buffers = List.copyOf(buffers);
        this.recomputed = recomputed;
        if (flatParameters.stream().noneMatch(FlatParameter::needsGather)) {
            state = UnitState.GATHERED;
        }
    }

    /** Returns the unit's position: 0 for the root, then forward order. */
    public int getIndex() {
        return index;
    }

    /** Returns the unit's name, the block's dotted path in the model. */
    public String getName() {
        return name;
    }

    /** Returns the wrapped block (the model's top block for the root unit). */
    public Block getBlock() {
        return block;
    }

    /** Returns whether this is the root unit: what no other unit holds, gathered for a pass. */
    public boolean isRoot() {
        return index == 0;
    }

    /** Returns whether backward recomputes the unit instead of keeping its graph from forward. */
    public boolean isRecomputed() {
        return recomputed;
    }

    /** Returns the blocks that hold the unit's block as a child, none for the root. */
    public List<Block> getParents() {
        return parents;
    }

    /** Returns whether any of the unit's parameters trains. */
    public boolean isTrainable() {
        return flatParameters.stream().anyMatch(FlatParameter::isTrainable);
    }

    /** Returns the unit's flat parameters. */
    public List<FlatParameter> getFlatParameters() {
        return flatParameters;
    }

    /** Returns the unit's buffers: state its blocks update in forward, whole on every rank. */
    public List<Parameter> getBuffers() {
        return buffers;
    }

    /** Returns the unit's sharded parameters, in the order of its flat parameters. */
    public List<Parameter> getParameters() {
        List<Parameter> parameters = new ArrayList<>();
        flatParameters.forEach(flat -> parameters.addAll(flat.getParameters()));
        return parameters;
    }

    /** Returns where the unit's parameters are. */
    public UnitState getState() {
        return state;
    }

    void gatherStarted(PendingGather gather) {
        state = UnitState.GATHERING;
        pendingGather = gather;
    }

    /**
     * Waits for a gather in flight; the unit is then gathered and its send buffers are freed (on a
     * GPU the current stream waits for the gather by then, and frees come in stream order).
     */
    void awaitGather() {
        if (state == UnitState.GATHERING) {
            PendingGather gather = pendingGather;
            pendingGather = null;
            gather.await();
            flatParameters.forEach(FlatParameter::releaseSendBuffers);
            state = UnitState.GATHERED;
        }
    }

    /**
     * Makes the unit gather into releasable memory from now on (resharded after forward, not
     * recomputed): a unit whose flat parameters are not split keeps its own buffers.
     */
    void useReleasableMemory() {
        releasable = flatParameters.stream().anyMatch(FlatParameter::needsGather);
    }

    /** Returns whether gathers go into releasable memory. */
    boolean isReleasable() {
        return releasable;
    }

    /**
     * Records that a graph kept for backward refers to the releasable full buffers: until {@link
     * #free}, resharding releases their physical memory and keeps their addresses.
     */
    void holdForGraph() {
        heldByGraph = releasable;
    }

    /** Returns whether a kept graph refers to the full buffers (they must be gathered for it). */
    boolean isHeldByGraph() {
        return heldByGraph;
    }

    /**
     * Gives back the full buffers' memory (after any gather in flight): frees them, or, while a
     * kept graph refers to them, releases their memory ({@link UnitState#RELEASED}). A unit whose
     * buffers are not split keeps its own.
     */
    void reshard() {
        views.clear();
        if (flatParameters.stream().noneMatch(FlatParameter::needsGather)) {
            return;
        }
        awaitGather();
        if (heldByGraph) {
            for (FlatParameter flat : flatParameters) {
                if (flat.isFullReleasable()) {
                    flat.releaseFull();
                } else if (flat.isPacked()) {
                    flat.freeFull(); // decoded into new arrays: no graph holds it
                }
            }
            state = UnitState.RELEASED;
        } else {
            flatParameters.forEach(FlatParameter::freeFull);
            state = UnitState.RESHARDED;
        }
    }

    /** Frees the full buffers even if released: only once no graph over them is alive. */
    void free() {
        heldByGraph = false;
        reshard();
    }

    /**
     * Makes the parameters readable through the parameter store: views into the gathered buffers,
     * owned by {@code scope}. With {@code withGrad}, a trainable buffer gets autograd leaves for
     * its gradient: a unit's buffer is a leaf itself, its parameters' views made from it in the
     * graph; the root's parameters' views are leaves each (see {@link GradientLeaves}).
     *
     * <p>Buffers are seen in {@code precision}: a gathered buffer already has it; a buffer that is
     * not split (its own full buffer, float32) is cast into {@code scope}, so its gradient too
     * comes back in that type.
     *
     * @return the gradient leaves, one per flat parameter, null for frozen ones or without grad
     */
    List<GradientLeaves> materialize(boolean withGrad, Precision precision, NDManager scope) {
        if (state != UnitState.GATHERED) {
            throw new IllegalStateException(
                    "FSDP unit " + name + " is " + state + ", not gathered");
        }
        List<GradientLeaves> leaves = new ArrayList<>(flatParameters.size());
        for (FlatParameter flat : flatParameters) {
            NDArray full = flat.getFull();
            NDArray typed = flat.isPacked() ? full : precision.cast(full);
            if (typed != full) {
                typed.attach(scope);
            }
            NDArray alias = typed.stopGradient();
            alias.attach(scope);
            GradientLeaves flatLeaves = null;
            if (withGrad && flat.isTrainable()) {
                // The root's parameters receive gradients in several backward calls (the loss's,
                // then each input gradient handed back into its graph). Units do not nest, so the
                // root is the one whose input gradients are pushed into its graph.
                flatLeaves =
                        isRoot()
                                ? GradientLeaves.ofParameters(flat.getLayout(), alias, scope)
                                : GradientLeaves.ofBuffer(flat.getLayout(), alias, scope);
            }
            leaves.add(flatLeaves);
            List<NDArray> parameterViews =
                    flatLeaves != null ? flatLeaves.views() : flat.getLayout().viewsOf(alias);
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

    /** Returns the bytes of the full buffers in physical memory (see FlatParameter). */
    public long getGatheredResidentBytes() {
        long bytes = 0;
        for (FlatParameter flat : flatParameters) {
            if (flat.needsGather()) {
                bytes += flat.getFullResidentBytes();
            }
        }
        return bytes;
    }

    /** Returns the current view of {@code parameter}, or null when the unit is not materialized. */
    NDArray viewOf(Parameter parameter) {
        return views.get(parameter.getId());
    }

    /**
     * Frees the full buffers and closes every flat parameter (reservations, mappings, pinned
     * registrations), even if an earlier step fails: the first error is thrown, later ones
     * suppressed onto it.
     */
    @Override
    public void close() {
        Failures.runAll(this::free, () -> Failures.forEach(flatParameters, FlatParameter::close));
    }
}
