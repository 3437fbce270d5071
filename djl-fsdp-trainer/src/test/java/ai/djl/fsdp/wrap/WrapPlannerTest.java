package ai.djl.fsdp.wrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.reflect.BlockChildren;
import ai.djl.fsdp.trainer.WrapPolicy;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.nn.norm.LayerNorm;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.Initializer;
import ai.djl.util.PairList;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class WrapPlannerTest {

    /**
     * {@code [Linear(8), [LayerNorm, Linear(8)], [LayerNorm, Linear(8)], Linear(2)]} on width 8.
     */
    private static SequentialBlock model(NDManager manager) {
        SequentialBlock model =
                new SequentialBlock()
                        .add(Linear.builder().setUnits(8).build())
                        .add(
                                new SequentialBlock()
                                        .add(LayerNorm.builder().axis(1).build())
                                        .add(Linear.builder().setUnits(8).build()))
                        .add(
                                new SequentialBlock()
                                        .add(LayerNorm.builder().axis(1).build())
                                        .add(Linear.builder().setUnits(8).build()))
                        .add(Linear.builder().setUnits(2).build());
        model.setInitializer(Initializer.ONES, Parameter.Type.WEIGHT);
        model.initialize(manager, DataType.FLOAT32, new Shape(1, 8));
        return model;
    }

    @Test
    void policyThatMatchesNothingNamesTheModelsBlockClasses() {
        try (NDManager manager = NDManager.newBaseManager()) {
            IllegalArgumentException e =
                    assertThrows(
                            IllegalArgumentException.class,
                            () ->
                                    WrapPlanner.plan(
                                            model(manager), WrapPolicy.byLayerClass("GPT2Block")));
            assertTrue(e.getMessage().contains("matches no block"), e.getMessage());
            assertTrue(
                    e.getMessage().contains("LayerNorm, Linear, SequentialBlock"), e.getMessage());
        }
    }

    @Test
    void aLayerClassThatMatchesNothingIsRefusedBesideOneThatMatches() {
        try (NDManager manager = NDManager.newBaseManager()) {
            SequentialBlock model = model(manager);
            IllegalArgumentException e =
                    assertThrows(
                            IllegalArgumentException.class,
                            () ->
                                    WrapPlanner.plan(
                                            model,
                                            WrapPolicy.byLayerClass(
                                                    "SequentialBlock", "LayerNormm", "Linear")));
            assertEquals(
                    "The wrap policy's layer class LayerNormm matches no block of the model"
                            + " (misspelled?). The model contains these block classes: LayerNorm,"
                            + " Linear, SequentialBlock. Name only classes among them (simple or"
                            + " fully qualified names).",
                    e.getMessage());
            // A fully qualified name matches as the simple one does.
            assertEquals(
                    2,
                    WrapPlanner.plan(
                                    model,
                                    WrapPolicy.byLayerClass(
                                            "SequentialBlock", LayerNorm.class.getName()))
                            .size());
        }
    }

    @Test
    void unitsDoNotNestAndKeepForwardOrder() {
        try (NDManager manager = NDManager.newBaseManager()) {
            SequentialBlock model = model(manager);
            List<WrapTarget> targets =
                    WrapPlanner.plan(model, WrapPolicy.byLayerClass("SequentialBlock"));
            assertEquals(
                    List.of("1", "2"),
                    targets.stream().map(WrapTarget::path).collect(Collectors.toList()));
            targets.forEach(t -> assertEquals(List.of(model), t.parents()));
        }
    }

    @Test
    void byMinParametersWrapsTheInnermostBlocksThatReachTheCount() {
        try (NDManager manager = NDManager.newBaseManager()) {
            // A Linear(8) on width 8 holds 72 elements, a LayerNorm 16, each inner block 88.
            List<String> paths =
                    WrapPlanner.plan(model(manager), WrapPolicy.byMinParameters(80)).stream()
                            .map(WrapTarget::path)
                            .collect(Collectors.toList());
            assertEquals(List.of("1", "2"), paths);
            List<String> linears =
                    WrapPlanner.plan(model(manager), WrapPolicy.byMinParameters(70)).stream()
                            .map(WrapTarget::path)
                            .collect(Collectors.toList());
            assertEquals(List.of("0", "1.1", "2.1"), linears);
        }
    }

    @Test
    void predicatePolicy() {
        try (NDManager manager = NDManager.newBaseManager()) {
            List<WrapTarget> targets =
                    WrapPlanner.plan(
                            model(manager), WrapPolicy.matching(b -> b instanceof LayerNorm));
            assertEquals(2, targets.size());
        }
    }

    /** A parent that keeps its child in a field of the child's own class. */
    private static final class RigidParent extends AbstractBlock {
        private final Linear child = addChildBlock("child", Linear.builder().setUnits(2).build());

        @Override
        protected NDList forwardInternal(
                ParameterStore store,
                NDList inputs,
                boolean training,
                PairList<String, Object> params) {
            return child.forward(store, inputs, training);
        }

        @Override
        public Shape[] getOutputShapes(Shape[] inputShapes) {
            return child.getOutputShapes(inputShapes);
        }
    }

    @Test
    void swapNamesAFieldItCannotRewrite() {
        RigidParent parent = new RigidParent();
        Block replacement = new SequentialBlock();
        IllegalStateException e =
                assertThrows(
                        IllegalStateException.class,
                        () -> BlockChildren.replace(parent, parent.child, replacement));
        assertTrue(
                e.getMessage().contains("field 'child' declared as Linear final"), e.getMessage());
        assertSame(parent.child, parent.getChildren().get(0).getValue(), "left as it was");
    }

    @Test
    void swapRewritesTheChildListAndRestoresIt() {
        SequentialBlock parent = new SequentialBlock();
        Block child = Linear.builder().setUnits(2).build();
        parent.add(child);
        Block replacement = new SequentialBlock();
        BlockChildren swap = BlockChildren.replace(parent, child, replacement);
        assertSame(replacement, parent.getChildren().get(0).getValue());
        swap.restore();
        assertSame(child, parent.getChildren().get(0).getValue());
    }

    @Test
    void aBlockHeldInSeveralPlacesIsOneUnitWithEveryParent() {
        Block shared = Linear.builder().setUnits(8).build();
        SequentialBlock first = new SequentialBlock().add(shared).add(new SequentialBlock());
        SequentialBlock second = new SequentialBlock().add(shared);
        SequentialBlock model = new SequentialBlock().add(first).add(second);
        List<WrapTarget> targets = WrapPlanner.plan(model, b -> b == shared);
        assertEquals(1, targets.size());
        assertEquals("0.0", targets.get(0).path());
        assertEquals(List.of(first, second), targets.get(0).parents());

        Block replacement = new SequentialBlock();
        BlockChildren swap = BlockChildren.replace(targets.get(0).parents(), shared, replacement);
        assertSame(replacement, first.getChildren().get(0).getValue());
        assertSame(replacement, second.getChildren().get(0).getValue());
        swap.restore();
        assertSame(shared, first.getChildren().get(0).getValue());
        assertSame(shared, second.getChildren().get(0).getValue());
    }
}
