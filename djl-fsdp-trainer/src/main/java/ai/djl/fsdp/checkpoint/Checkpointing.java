package ai.djl.fsdp.checkpoint;

import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.internal.param.FlatParameter;
import ai.djl.fsdp.reflect.OptimizerStates;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.nn.Parameter;
import ai.djl.training.optimizer.Optimizer;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Saves and loads a sharded model's whole training state: every rank writes its own shards of the
 * parameters and of the optimizer state into its own file at once, rank 0 adds the metadata, the
 * trainer's state and the completeness marker, and the directory is renamed into place; loading
 * reads only this rank's elements, whatever the number of ranks that wrote them. A save may run in
 * the background after its snapshot: training goes on while the files are written.
 */
public final class Checkpointing implements AutoCloseable {

    private final ProcessGroup group;
    private final List<FlatParameter> flats;
    private final List<Parameter> buffers;
    private final Map<String, Parameter> parameters;
    private final Map<Parameter, String> names = new IdentityHashMap<>();
    private final Optimizer optimizer;
    private final Duration timeout;
    private final ExecutorService writer;
    private Future<?> inFlight;

    /**
     * Saves and loads the state of a sharded model's flat parameters and its optimizer.
     *
     * @param group the ranks that save and load together
     * @param flats this rank's flat parameters
     * @param buffers the model's buffers (not sharded)
     * @param parameters the model's parameters by name
     * @param optimizer the optimizer whose state is saved with the shards
     * @param timeout how long a rank waits for the others to agree on a save's outcome
     */
    public Checkpointing(
            ProcessGroup group,
            List<FlatParameter> flats,
            List<Parameter> buffers,
            Map<String, Parameter> parameters,
            Optimizer optimizer,
            Duration timeout) {
        this.group = group;
        this.flats = List.copyOf(flats);
        this.buffers = List.copyOf(buffers);
        this.parameters = parameters;
        parameters.forEach((name, parameter) -> names.put(parameter, name));
        this.optimizer = optimizer;
        this.timeout = timeout;
        writer =
                Executors.newSingleThreadExecutor(
                        task -> {
                            Thread thread = new Thread(task, "fsdp-checkpoint-writer");
                            thread.setDaemon(true);
                            return thread;
                        });
    }

    /**
     * Saves a checkpoint (a collective). Returns once this rank's state is copied: with {@code
     * async} the files are written in the background, else they are complete on return. Every rank
     * learns whether every rank's part was written: a failure anywhere fails the save (an
     * asynchronous one at the next save, load or close) on every rank.
     *
     * @param directory the checkpoint directory, on storage every rank shares
     * @param state the trainer's state, written by rank 0
     * @param async whether the files are written in the background
     * @param keepNewest with a value above 0, the oldest checkpoints beyond that many are deleted
     * @throws IOException if the save failed on any rank
     */
    public void save(Path directory, TrainingState state, boolean async, int keepNewest)
            throws IOException {
        await();
        StagedCheckpoint staged = new StagedCheckpoint(directory);
        Path target = staged.getTarget();
        boolean prepared = true;
        IOException failure = null;
        if (group.getRank() == 0) {
            try {
                staged.prepare();
            } catch (IOException e) {
                prepared = false;
                failure = e;
            }
        }
        agree(prepared, failure, target);
        List<String> kinds = optimizerKinds();
        ShardSnapshot snapshot =
                ShardSnapshot.take(flats, buffers, names, optimizer, kinds, group.getRank());
        CheckpointMetadata metadata =
                group.getRank() == 0
                        ? CheckpointMetadata.describe(flats, buffers, names, kinds)
                        : null;
        String stateJson = state.toJson();
        int writers = flats.isEmpty() ? 1 : flats.get(0).getLayout().getShardCount();
        if (async) {
            inFlight =
                    writer.submit(
                            () -> {
                                staged.writeShard(snapshot);
                                if (metadata != null) {
                                    staged.complete(
                                            metadata, stateJson, writers, keepNewest, timeout);
                                }
                                return null;
                            });
            return;
        }
        boolean written = true;
        try {
            staged.writeShard(snapshot);
        } catch (IOException e) {
            written = false;
            failure = e;
        }
        agree(written, failure, target);
        boolean finished = true;
        if (metadata != null) {
            try {
                staged.complete(metadata, stateJson, writers, keepNewest, timeout);
            } catch (IOException e) {
                finished = false;
                failure = e;
            }
        }
        agree(finished, failure, target);
    }

    /**
     * Fails on every rank unless every rank succeeded (a collective): this rank's own failure, or
     * one that names the checkpoint and points at the failing rank's message.
     */
    private void agree(boolean succeeded, IOException failure, Path target) throws IOException {
        int failed;
        try (NDManager scratch = NDManager.newBaseManager(group.getDevice())) {
            NDArray flag = scratch.create(new int[] {succeeded ? 0 : 1});
            group.allReduce(flag, ReduceOp.SUM);
            failed = flag.getInt(0);
        }
        if (failure != null) {
            throw failure;
        }
        if (failed > 0) {
            throw new IOException(
                    "Cannot save the checkpoint "
                            + target
                            + ": "
                            + failed
                            + " rank(s) failed; their own messages say why. The previous"
                            + " checkpoints are untouched.");
        }
    }

    /**
     * Loads a checkpoint into this rank's shards and the optimizer (every rank calls it).
     *
     * @param directory a complete checkpoint directory
     * @return the trainer's state as it was saved
     * @throws IOException if the checkpoint is incomplete or does not fit the model
     */
    public TrainingState load(Path directory) throws IOException {
        await();
        TrainingState state;
        try (ShardedCheckpointReader reader = ShardedCheckpointReader.open(directory, parameters)) {
            List<String> kinds = reader.getMetadata().getOptimizerKinds();
            if (!OptimizerStates.arrayKinds(optimizer).containsAll(kinds)) {
                throw new IOException(
                        directory
                                + " holds "
                                + kinds
                                + " optimizer state, which "
                                + optimizer.getClass().getSimpleName()
                                + " does not keep: resume with the optimizer that saved it");
            }
            state = TrainingState.read(directory.resolve(CheckpointDirectory.TRAINER_STATE));
            // What training changes is read before anything changes: a damaged file leaves the
            // adapters and the optimizer as they were. The frozen base is read straight into its
            // shards after it, one flat parameter at a time: read whole first, a 7B base would be
            // held twice (and in float32, as the files keep it).
            Map<FlatParameter, NDArray> values = new LinkedHashMap<>();
            Map<String, Map<String, NDArray>> states = new LinkedHashMap<>();
            try (NDManager scratch =
                    flats.isEmpty() ? null : flats.get(0).getShard().getManager().newSubManager()) {
                for (FlatParameter flat : flats) {
                    if (!flat.isTrainable()) {
                        continue;
                    }
                    values.put(flat, readShard(flat, reader, "", scratch));
                    Map<String, NDArray> byKind = new LinkedHashMap<>();
                    for (String kind : kinds) {
                        String prefix = CheckpointMetadata.OPTIMIZER_PREFIX + kind + ".";
                        byKind.put(kind, readShard(flat, reader, prefix, scratch));
                    }
                    states.put(flat.getId(), byKind);
                }
                List<NDArray> bufferValues = new ArrayList<>();
                for (Parameter buffer : buffers) {
                    NDManager manager = scratch != null ? scratch : buffer.getArray().getManager();
                    NDArray value =
                            reader.read(manager, names.get(buffer), 0, buffer.getShape().size());
                    bufferValues.add(value.reshape(buffer.getShape()));
                }
                for (int i = 0; i < buffers.size(); i++) {
                    Parameter buffer = buffers.get(i);
                    StateDict.copyInto(names.get(buffer), buffer, bufferValues.get(i));
                }
                for (FlatParameter flat : flats) {
                    if (flat.isTrainable()) {
                        flat.getShardToWrite().set(new NDIndex("..."), values.get(flat));
                    } else {
                        try (NDArray value = readShard(flat, reader, "", scratch)) {
                            flat.getShardToWrite().set(new NDIndex("..."), value);
                        }
                    }
                    flat.zeroGradient();
                    Map<String, NDArray> byKind = states.getOrDefault(flat.getId(), Map.of());
                    byKind.forEach(
                            (kind, array) ->
                                    OptimizerStates.put(optimizer, kind, flat.getId(), array));
                }
            }
        }
        Map<String, Integer> counts = state.getUpdateCounts();
        Map<String, Integer> restored = new LinkedHashMap<>();
        int largest = counts.getOrDefault("", 0);
        for (FlatParameter flat : flats) {
            if (flat.isTrainable()) {
                restored.put(flat.getId(), counts.getOrDefault(flat.getId(), largest));
            }
        }
        restored.put("", largest);
        OptimizerStates.setUpdateCounts(optimizer, restored);
        return state;
    }

    /** The kinds of state the optimizer keeps for the trainable shards (none before a step). */
    private List<String> optimizerKinds() {
        Set<String> kinds = new TreeSet<>();
        for (FlatParameter flat : flats) {
            if (flat.isTrainable()) {
                kinds.addAll(OptimizerStates.arrays(optimizer, flat.getId()).keySet());
            }
        }
        return List.copyOf(kinds);
    }

    private NDArray readShard(
            FlatParameter flat, ShardedCheckpointReader reader, String prefix, NDManager scratch) {
        return ShardLoader.readShard(
                flat.getLayout(),
                flat.getParameters(),
                flat.getShardIndex(),
                // The shard's own storage type: a narrower frozen shard is cast piece by piece.
                prefix.isEmpty() ? flat.getStorageType() : flat.getDataType(),
                reader.source(prefix, names),
                scratch);
    }

    /**
     * Waits for a save in the background (a collective: every rank had started it): once this
     * returns, the checkpoint is complete on every rank, or failed on every rank.
     *
     * @throws IOException if the save failed on any rank
     */
    public void await() throws IOException {
        Future<?> pending = inFlight;
        inFlight = null;
        if (pending == null) {
            return;
        }
        IOException failure = null;
        try {
            pending.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            failure = new IOException("Interrupted while a checkpoint was being written", e);
        } catch (ExecutionException e) {
            failure =
                    e.getCause() instanceof IOException io
                            ? io
                            : new IOException("The checkpoint could not be written", e.getCause());
        }
        agree(failure == null, failure, Path.of("in the background"));
    }

    @Override
    public void close() throws IOException {
        try {
            await();
        } finally {
            writer.shutdownNow();
        }
    }
}
