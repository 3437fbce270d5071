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
 * of both stacks and an untied head, the root keeping the shared table, the two final norms and a
 * tied head's one weight.
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
    void anUntiedHeadIsAUnitOfItsOwn() {
        T5ForConditionalGeneration t5 = T5Config.of(40, 32, 4, 48, 2, 3, "gated-gelu").newModel();
        List<UnitPlan.PlannedUnit> units =
                UnitPlan.of(t5, t5.defaultWrapPolicy(), UnitPlan::isBuffer).getUnits();
        assertEquals(names("root", BLOCKS, "lm_head"), names(units));
        assertEquals(
                List.of(new Shape(40, 32), new Shape(32), new Shape(32)), shapes(units.get(0)));
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
