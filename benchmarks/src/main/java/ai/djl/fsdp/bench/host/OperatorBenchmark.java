package ai.djl.fsdp.bench.host;

import ai.djl.fsdp.tensor.op.InPlace;
import ai.djl.fsdp.tensor.op.ScalarOps;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Setup;

/**
 * One operator on a small array ({@code [2, 16, 64]}, a host-bound step's activations), by the
 * paths a step takes into libtorch: DJL's JNI ({@code add}, a new array), DJL's JNI with a scalar
 * operand that {@link ScalarOps} keeps per device and value (one operator), and a call by schema
 * name through the dispatcher over JNA ({@link InPlace#exp}, {@code aten::exp_}). Each invocation
 * frees what it made, as a step's scoped managers do.
 */
public class OperatorBenchmark extends HostBenchmark {

    private NDArray a;
    private NDArray b;

    /** Makes the operands. */
    @Setup(Level.Trial)
    public void setUp() {
        a = manager.randomNormal(new Shape(2, 16, 64));
        b = manager.randomNormal(new Shape(2, 16, 64));
    }

    /** {@code a + b} through DJL's JNI. */
    @Benchmark
    public void djlAdd() {
        a.add(b).close();
    }

    /** {@code a * 0.5} with the scalar operand kept on the device: the product alone. */
    @Benchmark
    public void scalarMul() {
        ScalarOps.mul(a, 0.5f).close();
    }

    /** {@code b.exp_()} by schema name through {@code aoti_torch_call_dispatcher} over JNA. */
    @Benchmark
    public void dispatcherExp() {
        InPlace.exp(b);
    }
}
