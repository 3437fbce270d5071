package ai.djl.fsdp.trainer;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * FSDP on one rank must train exactly as DJL's ordinary trainer: the tape, the recompute and the
 * flat parameters change nothing numerically.
 */
class SingleRankTrainingTest {

    @ParameterizedTest
    @EnumSource(ShardingStrategy.class)
    void matchesDjlTrainer(ShardingStrategy strategy) {
        Scenario scenario = new Scenario(strategy, 1, 2, 0.5f, true, false, 3, 0f);
        Scenario.Result reference = scenario.runReference();
        Scenario.Result fsdp;
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            fsdp = scenario.runFsdp(group);
        }
        Equivalence.assertSameTraining(
                scenario.describe(),
                scenario.noiseBound(reference),
                reference.losses(),
                fsdp.losses(),
                reference.parameters(),
                fsdp.parameters());
        MultiRankTrainingTest.assertNoArrayOutlivesItsStep(scenario, fsdp.liveArrays());
    }
}
