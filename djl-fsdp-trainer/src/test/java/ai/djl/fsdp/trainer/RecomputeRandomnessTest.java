package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertNotEquals;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import org.junit.jupiter.api.Test;

/**
 * FULL_SHARD recomputes each unit in backward; with dropout in the units the recompute must draw
 * the masks of the first pass, so it trains exactly as SHARD_GRAD_OP, which keeps the first pass's
 * graph.
 */
class RecomputeRandomnessTest {

    @Test
    void recomputeReplaysTheForwardsDropoutMasks() {
        Scenario recompute =
                new Scenario(ShardingStrategy.FULL_SHARD, 1, 1, 0f, false, false, 3, 0.3f);
        Scenario kept =
                new Scenario(ShardingStrategy.SHARD_GRAD_OP, 1, 1, 0f, false, false, 3, 0.3f);
        Scenario noDropout =
                new Scenario(ShardingStrategy.SHARD_GRAD_OP, 1, 1, 0f, false, false, 3, 0f);
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            Scenario.Result withRecompute = recompute.runFsdp(group);
            Scenario.Result withKeptGraph = kept.runFsdp(group);
            Scenario.Result without = noDropout.runFsdp(group);
            assertNotEquals(without.losses()[0], withKeptGraph.losses()[0], "dropout is active");
            // The reference cannot draw the units' dropout masks: the noise is measured on
            // the same training without dropout.
            Equivalence.assertSameTraining(
                    "dropout, FULL_SHARD against SHARD_GRAD_OP",
                    noDropout.noiseBound(noDropout.runReference()),
                    withKeptGraph.losses(),
                    withRecompute.losses(),
                    withKeptGraph.parameters(),
                    withRecompute.parameters());
        }
    }
}
