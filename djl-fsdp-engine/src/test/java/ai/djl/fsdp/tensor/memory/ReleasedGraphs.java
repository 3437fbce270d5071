package ai.djl.fsdp.tensor.memory;

import ai.djl.engine.Engine;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;

/**
 * The graph the releasable memory tests build, as a FlatParameter's: the flat buffer over the
 * memory is the leaf, the weight a view of it, {@code sum(tanh(x W))} the output.
 */
final class ReleasedGraphs {

    private ReleasedGraphs() {}

    /**
     * Fills the memory, builds the graph, runs {@code betweenForwardAndBackward} (release, refill,
     * or nothing) and backward.
     *
     * @param manager the manager of the scope the graph is built in, on the memory's device
     * @param memory the memory of the {@code in x out} weight
     * @param x the input, {@code [rows, in]}
     * @param out the weight's columns
     * @param fill writes the weights through the raw memory, as an all-gather does
     * @param betweenForwardAndBackward what happens to the memory while the graph waits
     * @return the input's gradient and the flat buffer's
     */
    static float[][] gradients(
            NDManager manager,
            ReleasableMemory memory,
            NDArray x,
            int out,
            Runnable fill,
            Runnable betweenForwardAndBackward) {
        long in = x.getShape().get(1);
        try (NDManager scope = manager.newSubManager()) {
            fill.run();
            NDArray flat = memory.wrap(scope, new Shape(in * out), Precision.FLOAT32, 0);
            flat.setRequiresGradient(true);
            NDArray input = x.duplicate();
            input.attach(scope);
            input.setRequiresGradient(true);
            try (GradientCollector collector = Engine.getInstance().newGradientCollector()) {
                NDArray y = input.matMul(flat.reshape(in, out)).tanh().sum();
                betweenForwardAndBackward.run();
                collector.backward(y);
            }
            return new float[][] {
                input.getGradient().toFloatArray(), flat.getGradient().toFloatArray()
            };
        }
    }
}
