package ai.djl.fsdp.bench.host;

import ai.djl.fsdp.internal.param.FlatLayout;
import ai.djl.fsdp.zoo.gpt2.GPT2Block;
import ai.djl.fsdp.zoo.gpt2.GPT2Config;
import ai.djl.fsdp.zoo.nn.Attention;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.util.Pair;
import java.util.ArrayList;
import java.util.List;

/**
 * One GPT-2 block at the host-bound shape of {@code tools/host-cost/side-by-side.sh} (width 64, 4
 * heads, sequence 16, batch 2), initialized, with its inputs and its parameters' flat layout.
 *
 * @param block the block, its parameters initialized in the manager given to {@link #create}
 * @param inputs the hidden states {@code [2, 16, 64]} and the causal bias {@code [16, 16]}
 * @param layout the block's parameters laid out in one flat buffer, one shard
 */
record HostBoundUnit(GPT2Block block, NDList inputs, FlatLayout layout) {

    static final int WIDTH = 64;
    static final int HEADS = 4;
    static final int SEQUENCE = 16;
    static final int BATCH = 2;

    /**
     * Builds and initializes the block.
     *
     * @param manager the manager of its parameters and inputs
     * @return the unit
     */
    static HostBoundUnit create(NDManager manager) {
        GPT2Block block = firstBlock(GPT2Config.of(1, WIDTH, HEADS, SEQUENCE).newModel());
        Shape hidden = new Shape(BATCH, SEQUENCE, WIDTH);
        NDArray bias = Attention.causalBias(manager, null, BATCH, 0, SEQUENCE);
        block.initialize(manager, DataType.FLOAT32, hidden, bias.getShape());
        NDList inputs = new NDList(manager.randomNormal(hidden), bias);
        List<Shape> shapes = new ArrayList<>();
        for (Pair<String, Parameter> parameter : block.getParameters()) {
            shapes.add(parameter.getValue().getArray().getShape());
        }
        return new HostBoundUnit(block, inputs, new FlatLayout(shapes, 1));
    }

    private static GPT2Block firstBlock(Block block) {
        if (block instanceof GPT2Block found) {
            return found;
        }
        for (Block child : block.getChildren().values()) {
            GPT2Block found = firstBlock(child);
            if (found != null) {
                return found;
            }
        }
        return null;
    }
}
