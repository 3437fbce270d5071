package ai.djl.fsdp.bench.host;

import ai.djl.Device;
import ai.djl.fsdp.tensor.op.InPlace;
import ai.djl.fsdp.tensor.op.ScalarOps;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One operator on a small array ({@code [2, 16, 64]}, a host-bound step's activations), by the
 * paths a step takes into libtorch: DJL's JNI ({@code add}, a new array), DJL's JNI with a scalar
 * operand made on the array's device ({@link ScalarOps}, two operators: {@code aten::full} and the
 * product), and a call by schema name through the dispatcher over JNA ({@link InPlace#exp}, {@code
 * aten::exp_}). Each invocation frees what it made, as a step's scoped managers do.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(
        value = 1,
        jvmArgsAppend = {
            "-Xmx1g",
            "-Dai.djl.pytorch.num_threads=1",
            "-Dai.djl.pytorch.num_interop_threads=1"
        })
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class OperatorBenchmark {

    private NDManager manager;
    private NDArray a;
    private NDArray b;

    /** Makes the operands. */
    @Setup(Level.Trial)
    public void setUp() {
        manager = NDManager.newBaseManager(Device.cpu());
        a = manager.randomNormal(new Shape(2, 16, 64));
        b = manager.randomNormal(new Shape(2, 16, 64));
    }

    /** Frees the operands. */
    @TearDown(Level.Trial)
    public void tearDown() {
        manager.close();
    }

    /** {@code a + b} through DJL's JNI. */
    @Benchmark
    public void djlAdd() {
        a.add(b).close();
    }

    /**
     * {@code a * 0.5} with the scalar made on the device ({@code aten::full}, then the product).
     */
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
