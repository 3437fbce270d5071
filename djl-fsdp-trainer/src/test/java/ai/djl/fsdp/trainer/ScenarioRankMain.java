package ai.djl.fsdp.trainer;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.trainer.metrics.SentBytes;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * One rank of a multi-process test job: joins the job from the environment, runs each scenario
 * named on the command line with FSDP and writes what it produced to {@code <dir>/<i>-rank<r>}.
 *
 * <p>Arguments: the output directory, then scenarios as {@code STRATEGY,accumulation,maxGradNorm,
 * freeze,adam,steps,dropout,checkpointing}, or {@code fit}, {@code fit-shuffled} or {@code
 * fit-not-gathered} for a {@link FitScenario.Variant}.
 */
public final class ScenarioRankMain {

    /** The argument that runs {@link FitScenario}. */
    static final String FIT = "fit";

    /** The argument that runs {@link FitScenario} shuffled over three epochs. */
    static final String FIT_SHUFFLED = "fit-shuffled";

    /** The argument that runs {@link FitScenario} without gathering the model on close. */
    static final String FIT_NOT_GATHERED = "fit-not-gathered";

    /**
     * The argument that runs {@link FitScenario} with a checkpoint listener, into "checkpoints".
     */
    static final String FIT_CHECKPOINTED = "fit-checkpointed";

    private ScenarioRankMain() {}

    public static void main(String[] args) throws Exception {
        Path directory = Path.of(args[0]);
        DistributedEnv env = DistributedEnv.fromEnvironment();
        try (ProcessGroup group = ProcessGroups.init(env)) {
            for (int i = 1; i < args.length; i++) {
                Path file = directory.resolve(i + "-rank" + group.getRank());
                FitScenario.Variant variant =
                        switch (args[i]) {
                            case FIT -> FitScenario.Variant.PLAIN;
                            case FIT_SHUFFLED -> FitScenario.Variant.SHUFFLED;
                            case FIT_NOT_GATHERED -> FitScenario.Variant.NOT_GATHERED;
                            case FIT_CHECKPOINTED ->
                                    new FitScenario.Variant(
                                            FitScenario.EPOCHS,
                                            false,
                                            true,
                                            directory.resolve("checkpoints"));
                            default -> null;
                        };
                if (variant != null) {
                    FitScenario.Result fit = FitScenario.fit(group, variant);
                    // The counts travel as "losses"; rank 0 also returns its checkpoint's values.
                    ScenarioFiles.write(
                            file,
                            new Scenario.Result(
                                    new double[] {fit.trainingBatches(), fit.epochs()},
                                    group.getRank() == 0 ? fit.checkpoint() : fit.parameters(),
                                    new ShardingStats(0, 0, 0, 0, 0, 0, 0, SentBytes.NONE),
                                    new int[0],
                                    null));
                } else {
                    Scenario scenario = ScenarioFiles.parse(args[i], group.getSize());
                    ScenarioFiles.write(file, scenario.runFsdp(group));
                }
            }
        }
        System.out.println("ran " + Arrays.toString(Arrays.copyOfRange(args, 1, args.length)));
    }
}
