package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.nn.Block;
import ai.djl.nn.core.Linear;
import ai.djl.nn.norm.LayerNorm;
import java.util.List;
import org.junit.jupiter.api.Test;

class ActivationCheckpointingTest {

    private static final List<Block> UNITS =
            List.of(
                    Linear.builder().setUnits(4).build(),
                    LayerNorm.builder().build(),
                    Linear.builder().setUnits(4).build(),
                    LayerNorm.builder().build(),
                    Linear.builder().setUnits(4).build());

    @Test
    void choosesUnitsByPositionOrClass() {
        assertArrayEquals(
                new boolean[] {false, false, false, false, false},
                ActivationCheckpointing.none().select(UNITS));
        assertArrayEquals(
                new boolean[] {true, true, true, true, true},
                ActivationCheckpointing.everyUnit().select(UNITS));
        assertArrayEquals(
                new boolean[] {false, true, false, true, false},
                ActivationCheckpointing.everyNthUnit(2).select(UNITS));
        assertArrayEquals(
                new boolean[] {false, false, true, false, false},
                ActivationCheckpointing.everyNthUnit(3).select(UNITS));
        assertArrayEquals(
                new boolean[] {true, false, true, false, true},
                ActivationCheckpointing.byLayerClass("Linear").select(UNITS));
        assertArrayEquals(
                new boolean[] {true, true, true, true, true},
                ActivationCheckpointing.byLayerClass("ai.djl.nn.norm.LayerNorm", "Linear")
                        .select(UNITS));
        assertEquals(ActivationCheckpointing.everyUnit(), ActivationCheckpointing.everyNthUnit(1));
        assertTrue(ActivationCheckpointing.of(false).isNone());
        assertEquals(ActivationCheckpointing.everyUnit(), ActivationCheckpointing.defaultFor(true));
        assertEquals(ActivationCheckpointing.none(), ActivationCheckpointing.defaultFor(false));
    }

    @Test
    void parsesWhatItPrints() {
        for (ActivationCheckpointing policy :
                List.of(
                        ActivationCheckpointing.none(),
                        ActivationCheckpointing.everyUnit(),
                        ActivationCheckpointing.everyNthUnit(4),
                        ActivationCheckpointing.byLayerClass("GPT2Block", "LlamaDecoderLayer"))) {
            assertEquals(policy, ActivationCheckpointing.parse(policy.toString()));
        }
        assertEquals(ActivationCheckpointing.everyUnit(), ActivationCheckpointing.parse("True"));
        assertEquals(ActivationCheckpointing.none(), ActivationCheckpointing.parse(" FALSE "));
        assertEquals(
                ActivationCheckpointing.byLayerClass("GPT2Block"),
                ActivationCheckpointing.parse("class: GPT2Block ,"));
    }

    @Test
    void badPoliciesAreNamedWithTheFix() {
        IllegalArgumentException unknown =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> ActivationCheckpointing.parse("selective"));
        assertEquals(
                "activation checkpointing 'selective' is not one of none, full, every:N or"
                        + " class:NAME[,NAME...]",
                unknown.getMessage());
        assertEquals(
                "activation checkpointing 'every:two': N in every:N is a whole number",
                assertThrows(
                                IllegalArgumentException.class,
                                () -> ActivationCheckpointing.parse("every:two"))
                        .getMessage());
        assertEquals(
                "every N-th unit needs N >= 1 (1 recomputes every unit), got 0",
                assertThrows(
                                IllegalArgumentException.class,
                                () -> ActivationCheckpointing.everyNthUnit(0))
                        .getMessage());
        assertEquals(
                "activation checkpointing by layer class needs at least one class name",
                assertThrows(
                                IllegalArgumentException.class,
                                () -> ActivationCheckpointing.parse("class:"))
                        .getMessage());
        IllegalArgumentException noUnit =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                ActivationCheckpointing.byLayerClass("Linear", "GPT2Block")
                                        .select(UNITS));
        assertEquals(
                "activation checkpointing by layer class [GPT2Block] matches no FSDP unit; the"
                        + " units' classes are [LayerNorm, Linear]: name one of those (a class"
                        + " recomputed must be a unit, see the wrap policy)",
                noUnit.getMessage());
    }
}
