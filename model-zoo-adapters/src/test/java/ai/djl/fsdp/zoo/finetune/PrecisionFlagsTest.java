package ai.djl.fsdp.zoo.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.runtime.MixedPrecision;
import ai.djl.fsdp.zoo.finetune.config.AccelerateConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The precision flags: {@code --fp16} and Accelerate's {@code mixed_precision: fp16} train in
 * float16 with loss scaling, {@code --bf16} in bfloat16, neither in float32, both is refused.
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
        parse("--fp16", "True").check(notes::add, true);
        assertEquals(List.of(), notes);
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> parse("--fp16", "--bf16").check(notes::add, true));
        assertTrue(e.getMessage().contains("pick one"), e.getMessage());
    }

    @Test
    void accelerateFp16BecomesTheFlag(@TempDir Path directory) throws Exception {
        Path file =
                Files.writeString(
                        directory.resolve("fsdp_config.yaml"),
                        "distributed_type: FSDP\nmixed_precision: fp16\nnum_processes: 2\n");
        String flags = String.join(" ", AccelerateConfig.load(file, 2).getArguments());
        assertTrue(flags.contains("--fp16 true"), flags);
    }
}
