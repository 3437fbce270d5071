package ai.djl.fsdp.zoo.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.trainer.MixedPrecision;
import ai.djl.fsdp.zoo.finetune.args.HubCompatibility;
import ai.djl.fsdp.zoo.finetune.config.AccelerateDefaults;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * The precision flags: {@code --fp16} and Accelerate's {@code mixed_precision: fp16} (the
 * launcher's {@code ACCELERATE_MIXED_PRECISION}) train in float16 with loss scaling, {@code --bf16}
 * in bfloat16, neither in float32, both is refused.
 */
class PrecisionFlagsTest {

    private static HubCompatibility parse(String... args) {
        HubCompatibility flags = new HubCompatibility();
        new CommandLine(flags).parseArgs(args);
        return flags;
    }

    @Test
    void eachFlagPicksItsPrecision() {
        assertEquals(MixedPrecision.FP16, parse("--fp16", "True").mixedPrecision());
        assertTrue(parse("--fp16").mixedPrecision().needsLossScaling());
        assertEquals(MixedPrecision.BF16, parse("--bf16", "True").mixedPrecision());
        assertEquals(MixedPrecision.FP32, parse("--fp16", "False").mixedPrecision());
        assertEquals(MixedPrecision.FP16, MixedPrecision.of("fp16"));
    }

    @Test
    void bothFlagsAreRefusedAndFp16IsNoLongerANote() {
        List<String> notes = new ArrayList<>();
        parse("--fp16", "True").check(notes::add);
        assertEquals(List.of(), notes);
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> parse("--fp16", "--bf16").check(notes::add));
        assertTrue(e.getMessage().contains("pick one"), e.getMessage());
    }

    @Test
    void accelerateFp16BecomesTheFlag() {
        HubCompatibility flags = new HubCompatibility();
        new CommandLine(flags)
                .setDefaultValueProvider(
                        new AccelerateDefaults(
                                Map.of(
                                        "ACCELERATE_MIXED_PRECISION", "fp16",
                                        "ACCELERATE_USE_FSDP", "true")))
                .parseArgs();
        assertEquals(MixedPrecision.FP16, flags.mixedPrecision());
    }
}
