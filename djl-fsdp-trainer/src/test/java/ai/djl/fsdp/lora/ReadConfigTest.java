package ai.djl.fsdp.lora;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reading PEFT's {@code adapter_config.json} ({@link Lora#readConfig}): what PEFT would compute
 * otherwise than this build is refused naming the key and what to do, a value of the wrong type
 * names the key and the type wanted, sizes PEFT defaults are PEFT's defaults, and only a file that
 * is not JSON is called so; every message names the file.
 */
class ReadConfigTest {

    /** A PEFT config's opening, its targets only: a test appends its own keys. */
    private static final String TARGETS =
            "{\"peft_type\": \"LORA\", \"target_modules\": [\"q_proj\", \"v_proj\"]";

    @TempDir Path dir;

    @Test
    void settingsThatChangeTheResultAreRefusedNamingTheKey() throws IOException {
        assertRefused(", \"rank_pattern\": {\"q_proj\": 16}}", "rank_pattern {\"q_proj\":16}");
        assertRefused(", \"alpha_pattern\": {\"q_proj\": 2}}", "alpha_pattern {\"q_proj\":2}");
        assertRefused(", \"layers_to_transform\": [0, 1]}", "layers_to_transform [0,1]");
        assertRefused(", \"layers_to_transform\": []}", "layers_to_transform []");
        assertRefused(", \"layers_pattern\": \"layers\"}", "layers_pattern \"layers\"");
        assertRefused(", \"exclude_modules\": [\"lm_head\"]}", "exclude_modules [\"lm_head\"]");
        assertRefused(", \"lora_bias\": true}", "lora_bias true: not supported");
        assertRefused(", \"use_dora\": true}", "use_dora true: not supported");
        assertRefused(", \"bias\": \"all\"}", "bias \"all\": only \"none\" is supported");
        String regex = refusal("{\"target_modules\": \".*\\\\.(q|v)_proj\"}");
        assertTrue(
                regex.startsWith(
                        "target_modules \".*\\\\.(q|v)_proj\": PEFT matches a string as a regular"
                                + " expression"),
                regex);

        LoraConfig unset =
                read(
                        TARGETS
                                + ", \"rank_pattern\": {}, \"alpha_pattern\": {},"
                                + " \"layers_to_transform\": null, \"layers_pattern\": null,"
                                + " \"exclude_modules\": null, \"lora_bias\": false,"
                                + " \"use_dora\": false, \"bias\": \"none\"}");
        assertEquals(List.of("q_proj", "v_proj"), unset.getTargetModules());
        assertTrue(
                read("{\"target_modules\": \"all-linear\"}").targetsAllLinear(),
                "the string all-linear is PEFT's own");
    }

    @Test
    void missingSizesArePeftsDefaults() throws IOException {
        LoraConfig config = read(TARGETS + "}");
        assertEquals(8, config.getRank());
        assertEquals(1f, config.getScaling(), "lora_alpha 8 over r 8");
        assertEquals(0f, config.getDropout());
        assertEquals("CAUSAL_LM", config.getTaskType());
        LoraConfig given = read(TARGETS + ", \"r\": 4, \"lora_alpha\": 16, \"lora_dropout\": 0.1}");
        assertEquals(4, given.getRank());
        assertEquals(4f, given.getScaling());
        assertEquals(0.1f, given.getDropout());
    }

    @Test
    void wrongTypesNameTheKeyAndTheTypeWanted() throws IOException {
        assertRefused(", \"r\": \"eight\"}", "r \"eight\": give an integer");
        assertRefused(", \"r\": 2.5}", "r 2.5: give an integer");
        assertRefused(", \"r\": {\"value\": 4}}", "r {\"value\":4}: give an integer");
        assertRefused(", \"lora_alpha\": [16]}", "lora_alpha [16]: give a number");
        assertRefused(", \"use_rslora\": \"no\"}", "use_rslora \"no\": give true or false");
        assertRefused(", \"modules_to_save\": \"lm_head\"}", "modules_to_save \"lm_head\"");
        assertEquals(
                "target_modules [\"q_proj\",3]: give a list of module names",
                refusal("{\"target_modules\": [\"q_proj\", 3]}"));
        assertTrue(refusal("{\"r\": 4}").startsWith("target_modules is missing"));
    }

    @Test
    void onlyAFileThatIsNotJsonIsCalledSo() throws IOException {
        Path file = Files.writeString(dir.resolve(Lora.CONFIG_FILE), TARGETS);
        IllegalArgumentException truncated =
                assertThrows(IllegalArgumentException.class, () -> Lora.readConfig(dir));
        assertTrue(
                truncated.getMessage().startsWith(file + " is not valid JSON: the text ends early"),
                truncated.getMessage());
        Files.writeString(file, "[1, 2]");
        IllegalArgumentException array =
                assertThrows(IllegalArgumentException.class, () -> Lora.readConfig(dir));
        assertEquals(
                file + " holds [1,2], not a JSON object: is it PEFT's adapter config?",
                array.getMessage());
    }

    private LoraConfig read(String json) throws IOException {
        Files.writeString(dir.resolve(Lora.CONFIG_FILE), json);
        return Lora.readConfig(dir);
    }

    /** The message reading {@code json} is refused with, after the file's name. */
    private String refusal(String json) throws IOException {
        Path file = Files.writeString(dir.resolve(Lora.CONFIG_FILE), json);
        String message =
                assertThrows(IllegalArgumentException.class, () -> Lora.readConfig(dir))
                        .getMessage();
        assertTrue(message.startsWith(file + ": "), message);
        return message.substring((file + ": ").length());
    }

    /**
     * {@link #TARGETS} followed by {@code tail} is refused with a message starting {@code start}.
     */
    private void assertRefused(String tail, String start) throws IOException {
        String message = refusal(TARGETS + tail);
        assertTrue(message.startsWith(start), message);
    }
}
