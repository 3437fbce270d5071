package ai.djl.fsdp.runtime;

import static org.junit.jupiter.api.Assertions.assertSame;

import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.wrap.WrapPolicy;
import org.junit.jupiter.api.Test;

/** A program written against the old {@code ai.djl.fsdp.runtime.MixedPrecision} still compiles. */
@SuppressWarnings("deprecation")
class MixedPrecisionBridgeTest {

    @Test
    void oldNameGivesTheNewPolicies() {
        assertSame(ai.djl.fsdp.config.MixedPrecision.FP32, MixedPrecision.FP32);
        assertSame(ai.djl.fsdp.config.MixedPrecision.BF16, MixedPrecision.BF16);
        assertSame(ai.djl.fsdp.config.MixedPrecision.FP16, MixedPrecision.FP16);
        assertSame(
                ai.djl.fsdp.config.MixedPrecision.FP16.param(), MixedPrecision.of("fp16").param());
        FsdpConfig config =
                FsdpConfig.builder()
                        .optWrapPolicy(WrapPolicy.byLayerClass("GPT2Block"))
                        .optMixedPrecision(MixedPrecision.BF16)
                        .build();
        assertSame(MixedPrecision.BF16, config.getMixedPrecision());
    }
}
