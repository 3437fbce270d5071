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
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * One rank of the collectives benchmark, started by {@link CollectivesBenchCommand} (or by {@code
 * bin/fsdp launch} on several nodes). For each collective it checks one run against the locally
 * computed result, runs the warm-up, then times the runs; rank 0 writes the report lines. A wrong
 * result ends the rank with exit code 1, which stops the job.
 */
@Command(name = "collectives-rank", mixinStandardHelpOptions = true)
public final class CollectivesBenchRank implements Callable<Integer> {

    @Mixin private CollectivesOptions options;

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

    @Override
    public Integer call() throws IOException {
        DistributedEnv env = DistributedEnv.fromEnvironment();
        int worldSize = env.getWorldSize();
        options.check(worldSize);
        Device device = RankDevice.of(env);
        List<String> lines = new ArrayList<>();
        ProcessGroupOptions groupOptions = ProcessGroupOptions.builder().optDevice(device).build();
        try (ProcessGroup group = ProcessGroups.init(env, groupOptions);
                NDManager manager = NDManager.newBaseManager(device, "PyTorch")) {
            for (Collective collective : Collective.values()) {
                try (NDManager scope = manager.newSubManager()) {
                    Collective.Run run =
                            collective.prepare(group, scope, options.bytes() / Float.BYTES);
                    run.run();
                    Optional<String> mismatch = run.mismatch();
                    if (mismatch.isPresent()) {
                        System.err.println(
                                collective.label() + " gave a wrong result: " + mismatch.get());
                        return 1;
                    }
                    for (int i = 0; i < options.warmup(); i++) {
                        run.run();
                    }
                    group.barrier();
                    long start = System.nanoTime();
                    for (int i = 0; i < options.iterations(); i++) {
                        run.run();
                    }
                    // NCCL's await orders the GPU without blocking the host: wait for the end.
                    group.barrier();
                    double seconds = (System.nanoTime() - start) / 1e9 / options.iterations();
                    lines.add(collective.report(options.bytes(), seconds, worldSize));
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
