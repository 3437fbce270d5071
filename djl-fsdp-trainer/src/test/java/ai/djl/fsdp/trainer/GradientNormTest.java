package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import java.util.OptionalDouble;
import org.junit.jupiter.api.Test;

/** The gradient norm is measured at every step, with and without clipping (a finite value). */
class GradientNormTest {

    @Test
    void theNormIsMeasuredWithAndWithoutClipping() throws Exception {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            OptionalDouble clipped =
                    new Scenario(ShardingStrategy.FULL_SHARD, 1, 1, 0.5f, false, false, 2, 0f)
                            .lastGradNorm(group);
            assertTrue(clipped.isPresent(), "measured when clipping");
            assertTrue(
                    Double.isFinite(clipped.getAsDouble()) && clipped.getAsDouble() > 0,
                    "a finite, positive norm: " + clipped);
            OptionalDouble unclipped =
                    new Scenario(ShardingStrategy.FULL_SHARD, 1, 1, 0f, false, false, 2, 0f)
                            .lastGradNorm(group);
            assertTrue(
                    unclipped.isPresent()
                            && Double.isFinite(unclipped.getAsDouble())
                            && unclipped.getAsDouble() > 0,
                    "measured without clipping too: " + unclipped);
        }
    }
}
