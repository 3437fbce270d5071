package ai.djl.fsdp.dist.socket;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;

import java.time.Duration;
import java.util.Locale;

/**
 * A quick measurement of the socket backend's bandwidth, reported as nccl-tests does: {@code
 * algbw = bytes / time} with bytes the larger buffer, {@code busbw = algbw * (N-1)/N} for
 * all-gather and reduce-scatter and {@code algbw * 2(N-1)/N} for all-reduce. Run without {@code
 * RANK} set, it starts its own job on this machine:
 *
 * <pre>
 * java -cp &lt;test class path&gt; ai.djl.fsdp.dist.socket.CollectiveBandwidthMain [ranks] [MiB] [iterations]
 * </pre>
 *
 * <p>Environment variables {@code SOCKET_PEER_MEMORY_COPY=false}, {@code SOCKET_BUFFER_BYTES} and
 * {@code SOCKET_CHUNK_BYTES} set the matching {@code ProcessGroupOptions}. The benchmarks module
 * holds the measurements that count; this is a developer's check.
 */
public final class CollectiveBandwidthMain {

    private CollectiveBandwidthMain() {}

    public static void main(String[] args) {
        if (System.getenv("RANK") == null) {
            int ranks = args.length > 0 ? Integer.parseInt(args[0]) : 2;
            try (RankProcesses job = RankProcesses.builder(CollectiveBandwidthMain.class)
                    .worldSize(ranks)
                    .args(args)
                    .jvmOptions("-Xmx1g")
                    .timeout(Duration.ofMinutes(5))
                    .start()) {
                RankProcesses.Results results = job.await();
                System.out.print(results.rank(0).output());
                results.assertAllSucceeded();
            }
            return;
        }
        int mib = args.length > 1 ? Integer.parseInt(args[1]) : 64;
        int iterations = args.length > 2 ? Integer.parseInt(args[2]) : 10;
        ProcessGroupOptions.Builder options = ProcessGroupOptions.builder();
        String buffer = System.getenv("SOCKET_BUFFER_BYTES");
        if (buffer != null) {
            options.optSocketBufferBytes(Integer.parseInt(buffer));
        }
        String peerCopy = System.getenv("SOCKET_PEER_MEMORY_COPY");
        if (peerCopy != null) {
            options.optPeerMemoryCopy(Boolean.parseBoolean(peerCopy));
        }
        String chunk = System.getenv("SOCKET_CHUNK_BYTES");
        if (chunk != null) {
            options.optSocketChunkBytes(Integer.parseInt(chunk));
        }
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment(),
                        options.build());
                NDManager manager = NDManager.newBaseManager()) {
            int n = group.size();
            long elements = (long) mib << 18; // float32 elements in `mib` MiB
            NDArray full = manager.ones(new Shape(elements));
            NDArray piece = manager.ones(new Shape(elements / n));
            NDArray fullOut = manager.zeros(new Shape(elements / n * n));
            double factor = (n - 1) / (double) n;
            measure(group, "all_gather", elements / n * n * 4, factor, iterations,
                    () -> group.allGather(piece, fullOut));
            measure(group, "reduce_scatter", elements / n * n * 4, factor, iterations,
                    () -> group.reduceScatter(fullOut, piece, ReduceOp.SUM));
            measure(group, "all_reduce", elements * 4, 2 * factor, iterations,
                    () -> group.allReduce(full, ReduceOp.AVG));
        }
        System.exit(0);
    }

    private static void measure(ProcessGroup group, String name, long bytes, double busFactor,
            int iterations, Runnable collective) {
        for (int i = 0; i < 2; i++) {
            collective.run();
        }
        group.barrier();
        long start = System.nanoTime();
        for (int i = 0; i < iterations; i++) {
            collective.run();
        }
        group.barrier();
        double seconds = (System.nanoTime() - start) / 1e9 / iterations;
        double algbw = bytes / seconds / 1e9;
        if (group.rank() == 0) {
            System.out.printf(Locale.ROOT,
                    "%-15s %5d ranks %10d bytes %9.2f ms  algbw %6.2f GB/s  busbw %6.2f GB/s%n",
                    name, group.size(), bytes, seconds * 1e3, algbw, algbw * busFactor);
        }
    }
}
