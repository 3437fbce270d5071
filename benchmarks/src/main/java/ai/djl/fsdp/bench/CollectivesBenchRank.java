package ai.djl.fsdp.bench;

import ai.djl.Device;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.dist.RankDevice;
import ai.djl.ndarray.NDManager;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * One rank of the collectives benchmark, started by {@link CollectivesBenchCommand} (or by {@code
 * bin/fsdp launch} on several nodes). For each collective it checks one run against the locally
 * computed result, runs the warm-up, then times the runs; rank 0 writes the report lines. A wrong
 * result ends the rank with exit code 1, which stops the job.
 */
@Command(name = "collectives-rank", mixinStandardHelpOptions = true)
public final class CollectivesBenchRank implements Callable<Integer> {

    @Option(names = "--bytes", required = true, description = "Size of the larger buffer.")
    private long bytes;

    @Option(names = "--iters", required = true, description = "Timed runs per collective.")
    private int iterations;

    @Option(names = "--warmup", required = true, description = "Untimed runs first.")
    private int warmup;

    @Option(names = "--report", description = "Where rank 0 writes its lines (default: stdout).")
    private Path report;

    /**
     * Runs one rank; the job comes from the environment (see {@link DistributedEnv}).
     *
     * @param args the options
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new CollectivesBenchRank()).execute(args));
    }

    /**
     * Returns the command a launcher runs on every rank.
     *
     * @param bytes the larger buffer's size
     * @param iterations the timed runs per collective
     * @param warmup the untimed runs first
     * @param report where rank 0 writes its lines
     * @return the main class and its arguments
     */
    static List<String> command(long bytes, int iterations, int warmup, Path report) {
        return List.of(
                CollectivesBenchRank.class.getName(),
                "--bytes=" + bytes,
                "--iters=" + iterations,
                "--warmup=" + warmup,
                "--report=" + report);
    }

    /**
     * Rejects settings the benchmark cannot run with, before any rank starts.
     *
     * @throws IllegalArgumentException naming the setting and what it must be
     */
    static void checkSettings(long bytes, int iterations, int warmup, int worldSize) {
        if (bytes <= 0 || bytes % ((long) Float.BYTES * worldSize) != 0) {
            throw new IllegalArgumentException(
                    "--bytes must be a positive multiple of 4 bytes (a float32) times "
                            + worldSize
                            + " ranks, got "
                            + bytes);
        }
        if (iterations < 1 || warmup < 0) {
            throw new IllegalArgumentException(
                    "--iters must be at least 1 and --warmup at least 0, got "
                            + iterations
                            + " and "
                            + warmup);
        }
    }

    @Override
    public Integer call() throws IOException {
        DistributedEnv env = DistributedEnv.fromEnvironment();
        int worldSize = env.getWorldSize();
        checkSettings(bytes, iterations, warmup, worldSize);
        Device device = RankDevice.of(env);
        List<String> lines = new ArrayList<>();
        ProcessGroupOptions options = ProcessGroupOptions.builder().optDevice(device).build();
        try (ProcessGroup group = ProcessGroups.init(env, options);
                NDManager manager = NDManager.newBaseManager(device, "PyTorch")) {
            for (Collective collective : Collective.values()) {
                try (NDManager scope = manager.newSubManager()) {
                    Collective.Run run = collective.prepare(group, scope, bytes / Float.BYTES);
                    run.run();
                    Optional<String> mismatch = run.mismatch();
                    if (mismatch.isPresent()) {
                        System.err.println(
                                collective.label() + " gave a wrong result: " + mismatch.get());
                        return 1;
                    }
                    for (int i = 0; i < warmup; i++) {
                        run.run();
                    }
                    group.barrier();
                    long start = System.nanoTime();
                    for (int i = 0; i < iterations; i++) {
                        run.run();
                    }
                    // NCCL's await orders the GPU without blocking the host: wait for the end.
                    group.barrier();
                    double seconds = (System.nanoTime() - start) / 1e9 / iterations;
                    lines.add(collective.report(bytes, seconds, worldSize));
                }
            }
        }
        if (env.getRank() == 0) {
            if (report != null) {
                Files.write(report, lines, StandardCharsets.UTF_8);
            } else {
                lines.forEach(System.out::println);
            }
        }
        return 0;
    }
}
