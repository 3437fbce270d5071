package ai.djl.fsdp.zoo.t5;

import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.fsdp.wrap.UnitPlan;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * T5's default units ({@link T5ForConditionalGeneration#defaultWrapPolicy}): every {@link T5Block}
 * of both stacks, the root keeping the shared table, the two final norms and an untied head.
 */
class T5UnitsTest {

    @Test
    void everyBlockOfBothStacksIsAUnit() {
        T5ForConditionalGeneration t5 = T5Config.of(40, 32, 4, 48, 2, 3, "gated-gelu").newModel();
        List<UnitPlan.PlannedUnit> units =
                UnitPlan.of(t5, t5.defaultWrapPolicy(), UnitPlan::isBuffer).getUnits();
        assertEquals(
                List.of(
                        "root",
                        "encoder.block.0",
                        "encoder.block.1",
                        "decoder.block.0",
                        "decoder.block.1",
                        "decoder.block.2"),
                units.stream().map(UnitPlan.PlannedUnit::name).toList());
        assertEquals(
                List.of(new Shape(40, 32), new Shape(32), new Shape(32), new Shape(40, 32)),
                units.get(0).parameters().stream().map(Parameter::getShape).toList());
    }
}
