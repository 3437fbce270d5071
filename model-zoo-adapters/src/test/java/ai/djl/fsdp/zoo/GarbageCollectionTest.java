package ai.djl.fsdp.zoo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.engine.Engine;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.GradientCollector;
import ai.djl.training.ParameterStore;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The models' gradients do not depend on whether the garbage collector ran between forward and
 * backward. It would free the Java memory of any array made from Java data, or of a {@code Number}
 * operand, that autograd saved for backward (see {@code OwnedArrays}); this test makes it run
 * there, and overwrites the freed memory, so such a use reads NaN or garbage on every run.
 */
class GarbageCollectionTest {

    private static final LoraConfig ADAPTERS =
            LoraConfig.builder()
                    .setTargetModules(List.of(LoraConfig.ALL_LINEAR))
                    .optRank(2)
                    .optAlpha(4)
                    .build();

    @Test
    void gradientsAreTheSameWhenTheCollectorRunsBeforeBackward() throws InterruptedException {
        for (String name : List.of("gpt2-tiny", "llama-tiny")) {
            try (NDManager manager = TestModels.newManager()) {
                CausalLM model = TestModels.seeded(name, manager, 11);
                // The adapters' B gradients pass through LoRA's scaling, and back through every
                // layer's attention scale and activation: all the scalars the models use.
                Lora.apply(model, ADAPTERS);
                NDArray ids = TestModels.tokens(manager, 2, 5, 12);

                Map<String, float[]> undisturbed = gradients(model, ids, false);
                Map<String, float[]> collected = gradients(model, ids, true);

                assertEquals(undisturbed.keySet(), collected.keySet());
                for (String parameter : undisturbed.keySet()) {
                    assertArrayEquals(
                            undisturbed.get(parameter),
                            collected.get(parameter),
                            name + " " + parameter);
                }
            }
        }
    }

    /**
     * One backward of a fixed linear loss; returns the trainable parameters' gradients, then zeroes
     * them.
     */
    private static Map<String, float[]> gradients(
            CausalLM model, NDArray ids, boolean collectBeforeBackward)
            throws InterruptedException {
        NDManager manager = ids.getManager();
        Engine.getEngine("PyTorch").setRandomSeed(13);
        NDArray direction = manager.randomNormal(new Shape(2, 5, model.getConfig().vocabSize()));
        try (GradientCollector collector = Engine.getEngine("PyTorch").newGradientCollector()) {
            NDArray loss =
                    model.forward(new ParameterStore(manager, false), ids, null, null, false)
                            .mul(direction)
                            .mean();
            if (collectBeforeBackward) {
                reclaimAndOverwriteFreedMemory();
            }
            collector.backward(loss);
        }
        Map<String, float[]> gradients = new LinkedHashMap<>();
        for (Map.Entry<String, Parameter> entry : StateDict.parameters(model).entrySet()) {
            if (entry.getValue().requiresGradient()) {
                NDArray gradient = entry.getValue().getArray().getGradient();
                gradients.put(entry.getKey(), gradient.toFloatArray());
                gradient.subi(gradient);
            }
        }
        return gradients;
    }

    /**
     * Frees the memory of unreachable direct buffers, then allocates small buffers full of NaN, so
     * that freed memory handed out again reads as NaN through any tensor still pointing at it.
     */
    private static void reclaimAndOverwriteFreedMemory() throws InterruptedException {
        for (int round = 0; round < 3; round++) {
            System.gc();
            // Direct memory is freed by the Cleaner thread after the collection.
            Thread.sleep(20);
            for (int i = 0; i < 1000; i++) {
                ByteBuffer garbage =
                        ByteBuffer.allocateDirect(Float.BYTES).order(ByteOrder.nativeOrder());
                garbage.putFloat(Float.NaN);
            }
        }
    }
}
