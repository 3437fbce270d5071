package ai.djl.fsdp.zoo.nn;

import ai.djl.ndarray.NDList;
import ai.djl.nn.Block;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;
import java.util.List;

/**
 * PyTorch's {@code nn.ModuleList}: children named {@code 0, 1, ...}, giving names such as {@code
 * h.0.attn}. Its owner decides how to call them.
 */
public final class ModuleList extends HfBlock {

    /**
     * Creates a list.
     *
     * @param blocks the children, in order
     */
    public ModuleList(List<? extends Block> blocks) {
        for (int i = 0; i < blocks.size(); i++) {
            addChild(Integer.toString(i), blocks.get(i));
        }
    }

    /**
     * Returns the number of children.
     *
     * @return the size
     */
    public int size() {
        return getChildren().size();
    }

    /**
     * Returns the current child at a position.
     *
     * @param index the position
     * @return the child
     */
    public Block get(int index) {
        return child(Integer.toString(index));
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        throw new UnsupportedOperationException(
                "a ModuleList is a container; its owner calls the children");
    }
}
