package ai.djl.fsdp.bench;

import ai.djl.Device;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.launch.Launcher;
import ai.djl.fsdp.launch.RankFailedException;
import ai.djl.ndarray.NDManager;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The CPU collectives under JMH. JMH forks one JVM, so the benchmark thread is rank 0 and the
 * trial's setup starts ranks 1 to N-1 as child JVMs through the {@link Launcher}, each running
 * {@link CollectivesBenchPeer} in step with it. One invocation is one collective over {@code bytes}
 * (the larger buffer).
 *
 * <pre>
 * java -cp 'benchmarks/target/benchmarks.jar:benchmarks/target/lib/*' org.openjdk.jmh.Main CollectivesBenchmark
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Xmx1g", "-Dai.djl.pytorch.num_interop_threads=1"})
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 5, time = 2)
public class CollectivesBenchmark {

    /** A peer that dies surfaces within this long instead of JMH hanging. */
    private static final Duration PEER_TIMEOUT = Duration.ofMinutes(1);

    @Param({"all_gather", "reduce_scatter", "all_reduce"})
    private String op;

    @Param("2")
    private int ranks;

    @Param("67108864")
    private long bytes;

    private final AtomicReference<Throwable> peerFailure = new AtomicReference<>();
    private Thread peers;
    private ProcessGroup group;
    private NDManager manager;
    private Collective.Run run;

    /** The CPU group of every rank, with a timeout that turns a dead rank into an error. */
    static ProcessGroupOptions groupOptions() {
        // The socket ring's benchmark: CPU arrays even on a GPU host.
        return ProcessGroupOptions.builder()
                .optDevice(Device.cpu())
                .optTimeout(PEER_TIMEOUT)
                .build();
    }

    /** Starts the peers, joins the group as rank 0 and checks one run of the collective. */
    @Setup(Level.Trial)
    public void startRanks() {
        List<Integer> peerRanks = IntStream.range(1, ranks).boxed().collect(Collectors.toList());
        Launcher launcher =
                Launcher.builder()
                        .setNprocPerNode(ranks)
                        .setCommand(CollectivesBenchPeer.class.getName(), op, Long.toString(bytes))
                        .optLocalRanks(peerRanks)
                        .optJavaOptions(
                                List.of("-Xmx" + CollectivesBenchPeer.heapMegabytes(bytes) + "m"))
                        .build();
        peers = new Thread(() -> runPeers(launcher), "collectives-benchmark-peers");
        peers.start();
        DistributedEnv env = DistributedEnv.fromVariables(launcher.rankEnvironment(0));
        group = ProcessGroups.init(env, groupOptions());
        manager = NDManager.newBaseManager(Device.cpu(), "PyTorch");
        run = Collective.ofLabel(op).prepare(group, manager, bytes / Float.BYTES);
        run.run();
        run.mismatch()
                .ifPresent(
                        mismatch -> {
                            throw new IllegalStateException(
                                    op + " gave a wrong result: " + mismatch);
                        });
    }

    /** Runs the collective once, on every rank. */
    @Benchmark
    public void collective() {
        run.run();
    }

    /**
     * Leaves the group, which ends the peers' next collective and so the peers, and waits for them;
     * only peers that do not end are stopped.
     */
    @TearDown(Level.Trial)
    public void stopRanks() throws InterruptedException {
        group.close();
        manager.close();
        peers.join(PEER_TIMEOUT.toMillis());
        if (peers.isAlive()) {
            peers.interrupt();
            peers.join();
        }
        Throwable failure = peerFailure.get();
        if (failure != null) {
            throw new IllegalStateException("A peer rank failed", failure);
        }
    }

    private void runPeers(Launcher launcher) {
        try {
            launcher.run();
        } catch (InterruptedException e) {
            // The peers did not end with the trial: run() has stopped them.
        } catch (RankFailedException e) {
            peerFailure.set(e);
        }
    }
}
