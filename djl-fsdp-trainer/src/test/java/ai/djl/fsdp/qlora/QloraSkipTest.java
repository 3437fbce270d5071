package ai.djl.fsdp.qlora;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Which projections a skip list keeps in float: transformers' rule for bitsandbytes ({@code
 * _replace_with_bnb_linear}), where an entry skips a module whose own name it is, whose whole path
 * it is, or which lies under it (the entry followed by a dot appears in the module's path).
 */
class QloraSkipTest {

    @Test
    void anAncestorsPathSkipsEverythingUnderIt() {
        assertSkips(
                List.of("model.layers.1.mlp"),
                List.of("model.layers.1.mlp.down_proj", "model.layers.1.mlp.gate_proj"),
                List.of(
                        "model.layers.0.mlp.down_proj",
                        "model.layers.11.mlp.down_proj",
                        "model.layers.1.self_attn.q_proj"));
        // A part of the path, not only from its start: transformers tests a substring.
        assertSkips(
                List.of("layers.1"),
                List.of("model.layers.1.mlp.up_proj"),
                List.of("model.layers.10.mlp.up_proj"));
    }

    @Test
    void aLeafNameSkipsThatNameAnywhere() {
        assertSkips(
                List.of("lm_head", "down_proj"),
                List.of("lm_head", "model.layers.0.mlp.down_proj", "model.layers.3.mlp.down_proj"),
                List.of("model.layers.0.mlp.up_proj"));
        assertSkips(List.of("up_proj"), List.of(), List.of("model.layers.0.mlp.gate_up_proj"));
    }

    @Test
    void aWholePathSkipsThatModuleAlone() {
        assertSkips(
                List.of("model.layers.0.self_attn.q_proj"),
                List.of("model.layers.0.self_attn.q_proj"),
                List.of("model.layers.1.self_attn.q_proj", "model.layers.0.self_attn.k_proj"));
    }

    @Test
    void aDottedTailOfThePathSkipsAsLaterTransformersDoes() {
        // Where the path ends with it, at a component boundary (should_convert_module's endswith).
        assertSkips(
                List.of("0.mlp.down_proj"),
                List.of("model.layers.0.mlp.down_proj"),
                List.of("model.layers.10.mlp.down_proj", "model.layers.0.mlp.up_proj"));
        assertSkips(
                List.of("mlp.down_proj"),
                List.of("model.layers.0.mlp.down_proj", "model.layers.7.mlp.down_proj"),
                List.of("model.layers.0.mlp.up_proj"));
    }

    private static void assertSkips(List<String> skip, List<String> skipped, List<String> kept) {
        for (String path : skipped) {
            assertTrue(Qlora.skips(path, skip), skip + " skips " + path);
        }
        for (String path : kept) {
            assertFalse(Qlora.skips(path, skip), skip + " quantizes " + path);
        }
    }
}
