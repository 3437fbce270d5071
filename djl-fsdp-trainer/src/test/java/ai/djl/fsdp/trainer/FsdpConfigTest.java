package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.wrap.WrapPolicy;
import org.junit.jupiter.api.Test;

class FsdpConfigTest {

    @Test
    void defaultsAreFullShardWithPrefetchAndBroadcastInit() {
        FsdpConfig config =
                FsdpConfig.builder().optWrapPolicy(WrapPolicy.byLayerClass("GPT2Block")).build();
        assertEquals(ShardingStrategy.FULL_SHARD, config.getShardingStrategy());
        assertTrue(config.isPrefetch());
        assertTrue(config.isSyncModuleStates());
        assertEquals(1, config.getGradientAccumulationSteps());
        assertEquals(0f, config.getMaxGradNorm());
    }

    @Test
    void badSettingsAreNamedWithTheFix() {
        IllegalStateException noPolicy =
                assertThrows(IllegalStateException.class, () -> FsdpConfig.builder().build());
        assertTrue(noPolicy.getMessage().contains("optWrapPolicy"), noPolicy.getMessage());
        IllegalArgumentException accumulation =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> FsdpConfig.builder().optGradientAccumulationSteps(0));
        assertTrue(accumulation.getMessage().contains("at least 1"), accumulation.getMessage());
        assertThrows(IllegalArgumentException.class, () -> FsdpConfig.builder().optMaxGradNorm(0));
        assertThrows(IllegalArgumentException.class, () -> WrapPolicy.byLayerClass());
        assertThrows(IllegalArgumentException.class, () -> WrapPolicy.byMinParameters(0));
    }
}
