package ai.djl.fsdp.zoo.t5;

import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.fsdp.wrap.UnitPlan;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * T5's default units ({@link T5ForConditionalGeneration#defaultWrapPolicy}): every {@link T5Block}
 * of both stacks and, untied, the shared table (one unit in the three places that hold it) and the
 * head, the root keeping the two final norms; tied, the root keeps the table and the head's one
 * weight with them.
 */
class T5UnitsTest {

    private static final List<String> BLOCKS =
            List.of(
                    "encoder.block.0",
                    "encoder.block.1",
                    "decoder.block.0",
                    "decoder.block.1",
                    "decoder.block.2");

    @Test
    void anUntiedTableAndHeadAreUnitsOfTheirOwn() {
        T5ForConditionalGeneration t5 = T5Config.of(40, 32, 4, 48, 2, 3, "gated-gelu").newModel();
        List<UnitPlan.PlannedUnit> units =
                UnitPlan.of(t5, t5.defaultWrapPolicy(), UnitPlan::isBuffer).getUnits();
        List<String> expected = new ArrayList<>(List.of("root", "shared"));
        expected.addAll(BLOCKS);
        expected.add("lm_head");
        assertEquals(expected, names(units));
        assertEquals(List.of(new Shape(32), new Shape(32)), shapes(units.get(0)));
        UnitPlan.PlannedUnit table = units.get(1);
        assertEquals(List.of(new Shape(40, 32)), shapes(table));
        // The model and both stacks hold the one block: its stand-in takes all three places.
        assertEquals(
                List.of(t5, t5.getChildren().get(1).getValue(), t5.getChildren().get(2).getValue()),
                table.parents());
        assertEquals(List.of(new Shape(40, 32)), shapes(units.get(units.size() - 1)));
    }

    @Test
    void aTiedHeadStaysInTheRootWithTheTable() {
        T5ForConditionalGeneration t5 = T5Config.of(40, 32, 4, 48, 2, 3, "relu").newModel();
        List<UnitPlan.PlannedUnit> units =
                UnitPlan.of(t5, t5.defaultWrapPolicy(), UnitPlan::isBuffer).getUnits();
        assertEquals(names("root", BLOCKS), names(units));
        assertEquals(
                List.of(new Shape(40, 32), new Shape(32), new Shape(32)), shapes(units.get(0)));
    }

    private static List<String> names(String first, List<String> middle, String... last) {
        List<String> all = new ArrayList<>(List.of(first));
        all.addAll(middle);
        all.addAll(List.of(last));
        return all;
    }

    private static List<String> names(List<UnitPlan.PlannedUnit> units) {
        return units.stream().map(UnitPlan.PlannedUnit::name).toList();
    }

    private static List<Shape> shapes(UnitPlan.PlannedUnit unit) {
        return unit.parameters().stream().map(Parameter::getShape).toList();
    }
}
