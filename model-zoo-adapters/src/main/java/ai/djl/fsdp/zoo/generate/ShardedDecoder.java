package ai.djl.fsdp.zoo.generate;

import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.zoo.KvCache;
import ai.djl.fsdp.zoo.ModelConfig;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import java.util.Arrays;

/**
 * The decoder of a model sharded by an {@link FsdpTrainer}: each step is one inference pass that
 * gathers every unit once for all of this rank's sequences (their keys and values kept in the
 * rank's cache), so the ranks take the same number of steps, agreed on with one all-reduce of a
 * number per step.
 */
public final class ShardedDecoder implements Decoder {

    private final FsdpTrainer trainer;
    private final ModelConfig config;
    private final ProcessGroup group;

    /**
     * Creates the decoder.
     *
     * @param trainer the trainer that holds the sharded model
     * @param config the model's configuration
     * @param group the trainer's process group
     */
    public ShardedDecoder(FsdpTrainer trainer, ModelConfig config, ProcessGroup group) {
        this.trainer = trainer;
        this.config = config;
        this.group = group;
    }

    @Override
    public ModelConfig getConfig() {
        return config;
    }

    @Override
    public NDArray forward(NDArray ids, NDArray mask, KvCache cache) {
        NDList inputs = mask == null ? new NDList(ids) : new NDList(ids, mask);
        return trainer.evaluate(inputs, cache.asParams()).head();
    }

    @Override
    public int agreeOnSteps(int budget) {
        return Arrays.stream(everyRanks(budget)).min().orElse(budget);
    }

    @Override
    public int agreeOnBatches(int batches) {
        return Arrays.stream(everyRanks(batches)).max().orElse(batches);
    }

    @Override
    public boolean anyActive(boolean active) {
        return trainer.allReduce(active ? 1 : 0, ReduceOp.SUM) > 0;
    }

    /** Every rank's count, on the host: each rank puts its own in its slot of a sum. */
    private int[] everyRanks(int count) {
        float[] slots = new float[group.getSize()];
        slots[group.getRank()] = count;
        try (NDManager scratch = NDManager.newBaseManager(group.getDevice())) {
            NDArray all = scratch.create(slots);
            group.allReduce(all, ReduceOp.SUM);
            return all.toType(DataType.INT32, false).toIntArray();
        }
    }
}
