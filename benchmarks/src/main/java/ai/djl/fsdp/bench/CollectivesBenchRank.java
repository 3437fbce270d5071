package ai.djl.fsdp.bench;

import ai.djl.Device;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.dist.RankDevice;
import ai.djl.fsdp.dist.ShardingMesh;
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
 * result ends the rank with exit code 1, which stops the job. With shard groups smaller than the
 * job, the gathers and reduce-scatters run in rank 0's shard group and the all-reduce in its
 * replicate group, on the shard's bytes.
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
        int shardSize = options.shardGroupSize(worldSize);
        try (ProcessGroup group = ProcessGroups.init(env, groupOptions);
                ShardingMesh mesh =
                        shardSize == worldSize
                                ? ShardingMesh.flat(group)
                                : ShardingMesh.hybrid(group, shardSize);
                NDManager manager = NDManager.newBaseManager(device, "PyTorch")) {
            for (Collective collective : Collective.values()) {
                // Hybrid sharding all-reduces each rank's 1/S shard across the replicate group.
                boolean across = mesh.isHybrid() && collective == Collective.ALL_REDUCE;
                ProcessGroup ranks =
                        across ? mesh.getReplicateGroup().orElseThrow() : mesh.getShardGroup();
                long bytes = across ? options.bytes() / shardSize : options.bytes();
                try (NDManager scope = manager.newSubManager()) {
                    Collective.Run run = collective.prepare(ranks, scope, bytes / Float.BYTES);
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
                    String line = collective.report(bytes, seconds, ranks.getSize());
                    if (mesh.isHybrid()) {
                        line += collective.hybridReport(bytes, ranks.getSize(), across);
                    }
                    lines.add(line);
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
