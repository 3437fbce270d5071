package ai.djl.fsdp.bench.host;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.training.GradientCollector;
import ai.djl.training.ParameterStore;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Setup;

/**
 * One GPT-2 block's forward and backward at the host-bound width (64; explicit attention, batch 2,
 * sequence 16), through DJL's own training path: a graph recorded in a gradient collector and a
 * backward from the sum of the outputs. At this width the kernels cost next to nothing, so the time
 * is the host's: about as many operators as an FSDP unit's recompute and backward.
 */
public class UnitBenchmark extends HostBenchmark {

    private HostBoundUnit unit;
    private ParameterStore parameters;

    /** Builds the block. */
    @Setup(Level.Trial)
    public void setUp() {
        unit = HostBoundUnit.create(manager);
        parameters = new ParameterStore(manager, false);
    }

    /** Frees the block. */

    /** Forward with a graph, then backward into the parameters' gradients. */
    @Benchmark
    public void forwardBackward() {
        try (NDManager scope = manager.newSubManager();
                GradientCollector collector = Engine.getInstance().newGradientCollector()) {
            NDList inputs = new NDList(unit.inputs().head().duplicate(), unit.inputs().get(1));
            inputs.head().attach(scope);
            NDArray output = unit.block().forward(parameters, inputs, true).head();
            output.attach(scope);
            collector.backward(output.sum());
        }
    }
}
