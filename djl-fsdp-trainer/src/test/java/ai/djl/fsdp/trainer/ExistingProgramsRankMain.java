package ai.djl.fsdp.trainer;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.testing.RankProcesses;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * One rank of {@link ExistingProgramsTest}'s and {@link SyncBatchNormTest}'s jobs. Arguments: the
 * output directory, then runs as {@code PROGRAM:STRATEGY}, {@code PROGRAM:STRATEGY:PRECISION} or
 * {@code PROGRAM:STRATEGY:PRECISION:VARIANT} ({@code sync} or {@code local}: {@link
 * ExistingPrograms.Variant#of}); each writes {@code <dir>/<run with - for :>-rank<r>.json}.
 */
public final class ExistingProgramsRankMain {

    private ExistingProgramsRankMain() {}

    /**
     * Runs {@code runs} (each as {@link #main} takes it) on {@code worldSize} rank processes and
     * returns the fresh directory (named from {@code prefix}) their figures are in.
     */
    static Path runJob(String prefix, int worldSize, List<String> runs) throws Exception {
        Path directory = Files.createTempDirectory(prefix);
        List<String> args = new ArrayList<>();
        args.add(directory.toString());
        args.addAll(runs);
        try (RankProcesses job =
                RankProcesses.builder(ExistingProgramsRankMain.class)
                        .worldSize(worldSize)
                        .args(args.toArray(String[]::new))
                        .timeout(Duration.ofMinutes(8))
                        .start()) {
            job.await().assertAllSucceeded();
        }
        return directory;
    }

    public static void main(String[] args) throws Exception {
        Path directory = Path.of(args[0]);
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment())) {
            for (int i = 1; i < args.length; i++) {
                String[] parts = args[i].split(":");
                ExistingPrograms.Program program = ExistingPrograms.Program.valueOf(parts[0]);
                ShardingStrategy strategy = ShardingStrategy.valueOf(parts[1]);
                String run = args[i].replace(':', '-');
                String name = run + "-rank" + group.getRank();
                ExistingPrograms.fit(
                                program,
                                group,
                                strategy,
                                parts.length > 2
                                        ? MixedPrecision.of(parts[2])
                                        : MixedPrecision.FP32,
                                parts.length > 3
                                        ? ExistingPrograms.Variant.of(parts[3])
                                        : ExistingPrograms.Variant.ORDINARY,
                                directory.resolve(name),
                                directory.resolve(run + "-checkpoint"))
                        .write(directory.resolve(name + ".json"));
            }
        }
    }
}
