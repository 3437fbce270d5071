package ai.djl.fsdp.lora;

import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.Initializer;
import ai.djl.util.PairList;

/**
 * One of LoRA's two matrices, a bias-free projection {@code y = x W^T} with {@code W [out, in]}:
 * PEFT's {@code lora_A} / {@code lora_B} {@code nn.Linear}, so its parameter is named {@code
 * weight}.
 */
final class AdapterMatrix extends AbstractBlock {

    private final Parameter weight;

    AdapterMatrix(long in, long out, Initializer initializer) {
        weight =
                addParameter(
                        Parameter.builder()
                                .setName("weight")
                                .setType(Parameter.Type.WEIGHT)
                                .optShape(new Shape(out, in))
                                .optInitializer(initializer)
                                .build());
    }

    Parameter weight() {
        return weight;
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore parameterStore,
            NDList inputs,
            boolean training,
            PairList<String, Object> params) {
        var x = inputs.singletonOrThrow();
        var w = parameterStore.getValue(weight, x.getDevice(), training);
        return new NDList(x.matMul(w.swapAxes(0, 1)));
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        Shape in = inputShapes[0];
        return new Shape[] {in.slice(0, in.dimension() - 1).add(weight.getShape().get(0))};
    }
}
