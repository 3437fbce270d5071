package ai.djl.fsdp.lora;

import ai.djl.ndarray.NDArray;
import ai.djl.nn.Block;

/**
 * A block computing {@code y = x W^T (+ b)} that LoRA can adapt: its input is {@code [..., in]} and
 * its output {@code [..., out]}. Model code implements it for its projections (a PyTorch {@code
 * nn.Linear}, or GPT-2's {@code Conv1D}, which stores {@code W} transposed); {@link Lora} never
 * needs to know the concrete class.
 */
public interface LinearProjection extends Block {

    /**
     * Returns the size of the input's last axis.
     *
     * @return the input features
     */
    long inFeatures();

    /**
     * Returns the size of the output's last axis.
     *
     * @return the output features
     */
    long outFeatures();

    /**
     * Returns whether the weight is stored {@code [in, out]} (PEFT's {@code fan_in_fan_out}, true
     * for GPT-2's {@code Conv1D}) rather than {@code [out, in]}.
     *
     * @return true for an input-major weight
     */
    boolean fanInFanOut();

    /**
     * Adds {@code delta}, given {@code [out, in]}, to the weight in place, in whatever layout the
     * weight is stored. This is how adapters are merged into the base model.
     *
     * @param delta the weight update, {@code [out, in]}
     */
    void addToWeight(NDArray delta);
}
