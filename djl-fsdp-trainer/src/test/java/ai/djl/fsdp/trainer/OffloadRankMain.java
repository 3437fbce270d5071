package ai.djl.fsdp.trainer;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import java.nio.file.Path;

/**
 * One rank of {@link OffloadAndInitializationTest}'s job: runs each {@link OffloadRun} named on the
 * command line (as {@code offload,mostlyFrozen,deferredInit,steps,fromSource}) and writes its
 * result to {@code <dir>/<i>-rank<r>}.
 */
public final class OffloadRankMain {

    private OffloadRankMain() {}

    public static void main(String[] args) throws Exception {
        Path directory = Path.of(args[0]);
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment())) {
            for (int i = 1; i < args.length; i++) {
                String[] f = args[i].split(",");
                OffloadRun run =
                        new OffloadRun(
                                Boolean.parseBoolean(f[0]),
                                Boolean.parseBoolean(f[1]),
                                Boolean.parseBoolean(f[2]),
                                Integer.parseInt(f[3]),
                                Boolean.parseBoolean(f[4]));
                OffloadRun.write(directory.resolve(i + "-rank" + group.getRank()), run.run(group));
            }
        }
    }

    static String format(OffloadRun run) {
        return String.join(
                ",",
                String.valueOf(run.offload()),
                String.valueOf(run.mostlyFrozen()),
                String.valueOf(run.deferredInit()),
                String.valueOf(run.steps()),
                String.valueOf(run.fromSource()));
    }
}
