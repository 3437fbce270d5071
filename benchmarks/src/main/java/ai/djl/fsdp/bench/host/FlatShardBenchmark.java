package ai.djl.fsdp.bench.host;

import ai.djl.fsdp.internal.param.FlatLayout;
import ai.djl.fsdp.internal.runtime.GradientLeaves;
import ai.djl.fsdp.optim.Adam;
import ai.djl.fsdp.optim.ElementFactor;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.op.Autograd;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.tracker.Tracker;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Setup;

/**
 * What a unit's flat buffer costs the host per step, for a GPT-2 block of width 64 (12 parameters,
 * 49,984 elements): a gathered buffer made the gradient leaf with its parameters' views made from
 * it in the graph ({@link GradientLeaves}, {@link FlatLayout#viewsOf}), the flat gradient backward
 * leaves on it, and one AdamW update of the flat shard ({@link Adam}, PyTorch's formulas, as {@code
 * bench train} steps).
 */
public class FlatShardBenchmark extends HostBenchmark {

    private FlatLayout layout;
    private NDArray buffer;
    private GradientLeaves leaves;
    private Adam adamW;
    private NDArray weight;
    private NDArray gradient;
    private NDArray updated;

    /** Lays the block's parameters out and leaves a flat gradient on the buffer's leaf. */
    @Setup(Level.Trial)
    public void setUp() {
        layout = HostBoundUnit.create(manager).layout();
        buffer = manager.randomNormal(new Shape(layout.getPaddedNumel()));
        leaves = GradientLeaves.ofBuffer(layout, buffer, manager);
        Autograd.withGradMode(
                true,
                () -> {
                    NDList squares = new NDList();
                    for (NDArray leaf : leaves.views()) {
                        squares.add(leaf.square().sum());
                    }
                    NDArray loss = NDArrays.stack(squares).sum();
                    Autograd.backward(loss, manager.ones(loss.getShape()));
                    return null;
                });
        adamW = Adam.adamWBuilder().optLearningRateTracker(Tracker.fixed(1e-4f)).build();
        weight = manager.randomNormal(new Shape(layout.getShardNumel()));
        gradient = manager.randomNormal(new Shape(layout.getShardNumel()));
        updated = gradient.duplicate();
    }

    /** Frees the arrays. */

    /** Restores the gradient the update overwrites (outside the measured time). */
    @Setup(Level.Invocation)
    public void restoreGradient() {
        gradient.copyTo(updated);
    }

    /** A gathered buffer made the leaf, and its parameters' views of it in the graph. */
    @Benchmark
    public void views() {
        try (NDManager scope = manager.newSubManager()) {
            GradientLeaves.ofBuffer(layout, buffer, scope);
        }
    }

    /** The flat gradient backward left on the buffer's leaf, as the reduction reads it. */
    @Benchmark
    public void flatGradient() {
        try (NDManager scope = manager.newSubManager()) {
            leaves.flatGradient(Precision.FLOAT32, scope);
        }
    }

    /** One AdamW update of the flat shard, weight decay 0.01 on every element. */
    @Benchmark
    public void adamW() {
        adamW.update("unit", weight, updated, ElementFactor.ONE, ElementFactor.ONE);
    }
}
