package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.fsdp.tensor.memory.CudaLibraries;
import ai.djl.fsdp.wrap.WrapPolicy;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class FsdpConfigTest {

    @Test
    void defaultsAreFullShardWithPrefetchAndBroadcastInit() {
        FsdpConfig config =
                FsdpConfig.builder().optWrapPolicy(WrapPolicy.byLayerClass("GPT2Block")).build();
        assertEquals(ShardingStrategy.FULL_SHARD, config.getShardingStrategy());
        assertTrue(config.isPrefetch());
        assertTrue(config.isSyncModuleStates());
        TrainerOptions options = TrainerOptions.defaults();
        assertEquals(1, options.getGradientAccumulationSteps());
        assertEquals(0f, options.getMaxGradNorm());
        assertEquals(1, options.getMaxNonFiniteSteps());
    }

    @Test
    void badSettingsAreNamedWithTheFix() {
        IllegalStateException noPolicy =
                assertThrows(IllegalStateException.class, () -> FsdpConfig.builder().build());
        assertTrue(noPolicy.getMessage().contains("optWrapPolicy"), noPolicy.getMessage());
        IllegalArgumentException accumulation =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> TrainerOptions.builder().optGradientAccumulationSteps(0));
        assertTrue(accumulation.getMessage().contains("at least 1"), accumulation.getMessage());
        assertThrows(
                IllegalArgumentException.class, () -> TrainerOptions.builder().optMaxGradNorm(0));
        IllegalArgumentException nonFinite =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> TrainerOptions.builder().optMaxNonFiniteSteps(0));
        assertTrue(nonFinite.getMessage().contains("at least 1"), nonFinite.getMessage());
        assertThrows(IllegalArgumentException.class, () -> WrapPolicy.byLayerClass());
        assertThrows(IllegalArgumentException.class, () -> WrapPolicy.byMinParameters(0));
        FsdpConfig reshardWithoutRecompute =
                FsdpConfig.builder()
                        .optWrapPolicy(WrapPolicy.byLayerClass("GPT2Block"))
                        .optActivationCheckpointing(false)
                        .build();
        assertTrue(reshardWithoutRecompute.getExecutionOptions().releasesKeptParameters());
        reshardWithoutRecompute.getExecutionOptions().checkDevice(Device.cpu());
        // CUDA GPUs release through the driver's virtual memory, checked for up front (a CPU-only
        // machine names what is missing); any other device is refused.
        Optional<String> driver = CudaLibraries.Part.DRIVER.problem();
        if (driver.isPresent()) {
            UnsupportedOperationException missing =
                    assertThrows(
                            UnsupportedOperationException.class,
                            () ->
                                    reshardWithoutRecompute
                                            .getExecutionOptions()
                                            .checkDevice(Device.gpu(0)));
            assertTrue(missing.getMessage().startsWith(driver.get()), missing.getMessage());
            assertTrue(missing.getMessage().contains("gpu(0)"), missing.getMessage());
        } else {
            reshardWithoutRecompute.getExecutionOptions().checkDevice(Device.gpu(0));
        }
        FsdpConfig.builder()
                .optWrapPolicy(WrapPolicy.byLayerClass("GPT2Block"))
                .optActivationCheckpointing(true)
                .build()
                .getExecutionOptions()
                .checkDevice(Device.gpu(0));
        IllegalArgumentException elsewhere =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                reshardWithoutRecompute
                                        .getExecutionOptions()
                                        .checkDevice(Device.of("tpu", 0)));
        assertTrue(
                elsewhere.getMessage().contains("reshard_after_forward"), elsewhere.getMessage());
        assertTrue(elsewhere.getMessage().contains("tpu(0)"), elsewhere.getMessage());
    }

    @Test
    void strategiesAreShorthandsForTheShardingSettings() {
        for (ShardingStrategy strategy : ShardingStrategy.values()) {
            FsdpConfig config =
                    FsdpConfig.builder()
                            .optWrapPolicy(WrapPolicy.byLayerClass("GPT2Block"))
                            .optShardingStrategy(strategy)
                            .build();
            assertEquals(strategy, config.getShardingStrategy());
        }
        FsdpConfig keepGatheredButRecompute =
                FsdpConfig.builder()
                        .optWrapPolicy(WrapPolicy.byLayerClass("GPT2Block"))
                        .optReshardAfterForward(false)
                        .build();
        assertEquals(
                ShardingStrategy.SHARD_GRAD_OP, keepGatheredButRecompute.getShardingStrategy());
        assertTrue(keepGatheredButRecompute.isActivationCheckpointing());
    }
}
