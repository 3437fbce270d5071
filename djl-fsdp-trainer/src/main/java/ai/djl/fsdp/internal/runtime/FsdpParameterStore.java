package ai.djl.fsdp.internal.runtime;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;

/**
 * The parameter store blocks read from under FSDP: a parameter's value is its view in its unit's
 * gathered flat buffer, valid while that unit computes. Updates are the trainer's sharded step.
 */
public final class FsdpParameterStore extends ParameterStore {

    private final ShardedModel model;

    /**
     * Creates a store over {@code model}.
     *
     * @param manager the manager arrays made by blocks from the store's manager go to
     * @param model the sharded model
     */
    public FsdpParameterStore(NDManager manager, ShardedModel model) {
        super(manager, false);
        this.model = model;
    }

    @Override
    public NDArray getValue(Parameter parameter, Device device, boolean training) {
        return parameter == null ? null : model.valueOf(parameter);
    }

    @Override
    public void updateAllParameters() {
        throw new UnsupportedOperationException(
                "FSDP updates the shards in FsdpTrainer.step(); this store holds no replicas");
    }

    @Override
    public void sync() {
        // Nothing to copy back: blocks compute with views of the gathered buffers.
    }
}
