package ai.djl.fsdp.trainer;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.runtime.MixedPrecision;
import java.nio.file.Path;

/**
 * One rank of {@link ExistingProgramsTest}'s job. Arguments: the output directory, then runs as
 * {@code PROGRAM:STRATEGY} or {@code PROGRAM:STRATEGY:PRECISION}; each writes {@code
 * <dir>/<PROGRAM>-<STRATEGY>-rank<r>.json}.
 */
public final class ExistingProgramsRankMain {

    private ExistingProgramsRankMain() {}

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
                                directory.resolve(name),
                                directory.resolve(run + "-checkpoint"))
                        .write(directory.resolve(name + ".json"));
            }
        }
    }
}
