package ai.djl.fsdp.trainer;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * One rank of a multi-process test job: joins the job from the environment, runs each scenario
 * named on the command line with FSDP and writes what it produced to {@code <dir>/<i>-rank<r>}.
 *
 * <p>Arguments: the output directory, then scenarios as {@code STRATEGY,accumulation,maxGradNorm,
 * freeze,adam,steps}.
 */
public final class ScenarioRankMain {

    private ScenarioRankMain() {}

    public static void main(String[] args) throws IOException {
        Path directory = Path.of(args[0]);
        DistributedEnv env = DistributedEnv.fromEnvironment();
        try (ProcessGroup group = ProcessGroups.init(env)) {
            for (int i = 1; i < args.length; i++) {
                Scenario scenario = ScenarioFiles.parse(args[i], group.size());
                Scenario.Result result = scenario.runFsdp(group);
                ScenarioFiles.write(directory.resolve(i + "-rank" + group.rank()), result);
            }
        }
        System.out.println("ran " + Arrays.toString(Arrays.copyOfRange(args, 1, args.length)));
    }
}
