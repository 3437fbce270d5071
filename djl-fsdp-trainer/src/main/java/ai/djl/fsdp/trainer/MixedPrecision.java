package ai.djl.fsdp.trainer;

import ai.djl.fsdp.tensor.Precision;
import java.util.Objects;

/**
 * The element types of a step, as FSDP2's {@code MixedPrecisionPolicy}: the shards, their gradients
 * and the optimizer state stay float32 (the master copy); a unit's shards are cast to {@code param}
 * and gathered in it, so units compute in it and their flat gradients come back in it; each flat
 * gradient is cast to {@code reduce} for the reduce-scatter (or all-reduce) and added to the
 * float32 shard gradient.
 *
 * @param param the type parameters are gathered and computed in
 * @param reduce the type gradients are reduced in
 */
public record MixedPrecision(Precision param, Precision reduce) {

    /** Everything in float32: no mixed precision. */
    public static final MixedPrecision FP32 = new MixedPrecision(Precision.FLOAT32);

    /** Gather and compute in bfloat16, reduce in float32: Accelerate's {@code bf16}. */
    public static final MixedPrecision BF16 = new MixedPrecision(Precision.BFLOAT16);

    /**
     * Gather and compute in float16, reduce in float32: Accelerate's {@code fp16}. The trainer
     * scales the loss dynamically (see {@code ai.djl.fsdp.optim.LossScaler}), since float16's range
     * ends at 65504 and its smallest normal is 6.1e-5.
     */
    public static final MixedPrecision FP16 = new MixedPrecision(Precision.FLOAT16);

    /**
     * Checks the types.
     *
     * @throws NullPointerException for a missing type
     */
    public MixedPrecision {
        Objects.requireNonNull(param, "param");
        Objects.requireNonNull(reduce, "reduce");
    }

    /**
     * Gathers and computes in {@code param}, reduces in float32 (FSDP2's default for the reduction
     * is the parameter type; float32 is the safer one and costs only the reduction's bytes).
     *
     * @param param the type parameters are gathered and computed in
     */
    public MixedPrecision(Precision param) {
        this(param, Precision.FLOAT32);
    }

    /**
     * Returns the policy of a setting: Accelerate's {@code mixed_precision} ({@code no}, {@code
     * bf16}, {@code fp16}) or the command line's {@code fp32}, {@code bf16}, {@code fp16}.
     *
     * @param name the value, in any case
     * @return the policy, reducing in float32
     * @throws IllegalArgumentException naming the accepted values
     */
    public static MixedPrecision of(String name) {
        return new MixedPrecision(Precision.of(name));
    }

    /**
     * Returns whether gradients pass through float16, whose range needs the loss scaled: the
     * trainer then scales the loss and skips steps whose gradients overflow.
     */
    public boolean needsLossScaling() {
        return param == Precision.FLOAT16 || reduce == Precision.FLOAT16;
    }

    /** Returns whether anything differs from float32. */
    public boolean isMixed() {
        return param != Precision.FLOAT32 || reduce != Precision.FLOAT32;
    }
}
