package ai.djl.fsdp.bench.host;

import ai.djl.Device;
import ai.djl.ndarray.NDManager;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What every host-path benchmark shares (JMH reads these settings from the superclass):
 * microseconds per call, one fork on one libtorch thread, short rounds, and a CPU manager that owns
 * what a benchmark's setup makes and is closed after the trial.
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
public abstract class HostBenchmark {

    /** Owns the benchmark's operands. */
    protected final NDManager manager = NDManager.newBaseManager(Device.cpu());

    /** Frees the operands. */
    @TearDown(Level.Trial)
    public void closeManager() {
        manager.close();
    }
}
