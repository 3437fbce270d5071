package ai.djl.fsdp.trainer;

import ai.djl.fsdp.internal.runtime.ShardedPasses;
import ai.djl.fsdp.tensor.op.Autograd;
import ai.djl.ndarray.NDList;
import ai.djl.training.ParameterStore;
import java.util.function.Function;

/**
 * One forward pass of the sharded model: the units gather their parameters as the blocks run (see
 * {@link ShardedPasses#beginForward}), and a pass that no backward follows (evaluation, or a
 * forward outside a gradient collector) ends by freeing what it gathered.
 */
final class ForwardPass {

    private ForwardPass() {}

    /**
     * Runs {@code pass} over the sharded model.
     *
     * @param sharded the trainer's sharded state
     * @param data the input; the outputs join its manager, as they outlive the pass (listeners read
     *     them)
     * @param training whether the pass trains (a backward follows when gradients are recorded)
     * @param pass the block's forward, given the parameter store
     * @return the outputs
     */
    static NDList run(
            ShardedTraining sharded,
            NDList data,
            boolean training,
            Function<ParameterStore, NDList> pass) {
        ShardedPasses passes = sharded.getModel().getPasses();
        // Only a forward under an open gradient collector is followed by backward.
        boolean recording = training && Autograd.isGradMode();
        passes.beginForward(recording, data.head().getManager());
        try {
            NDList outputs = pass.apply(sharded.getParameterStore());
            outputs.attach(data.head().getManager());
            return outputs;
        } finally {
            passes.endForward();
            if (!recording) {
                passes.endInference();
            }
        }
    }
}
