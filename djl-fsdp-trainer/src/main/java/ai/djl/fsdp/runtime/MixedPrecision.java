package ai.djl.fsdp.runtime;

/**
 * The policies of {@link ai.djl.fsdp.config.MixedPrecision} under their old name, so that a program
 * written as {@code FsdpConfig.builder().optMixedPrecision(MixedPrecision.BF16)} with this class
 * imported still compiles: each constant and {@link #of} give the new type.
 *
 * @deprecated the type moved to {@link ai.djl.fsdp.config.MixedPrecision}; import that instead.
 *     This bridge names no type of its own, so a variable declared as this class no longer
 *     compiles.
 */
@Deprecated
public final class MixedPrecision {

    /** See {@link ai.djl.fsdp.config.MixedPrecision#FP32}. */
    public static final ai.djl.fsdp.config.MixedPrecision FP32 =
            ai.djl.fsdp.config.MixedPrecision.FP32;

    /** See {@link ai.djl.fsdp.config.MixedPrecision#BF16}. */
    public static final ai.djl.fsdp.config.MixedPrecision BF16 =
            ai.djl.fsdp.config.MixedPrecision.BF16;

    /** See {@link ai.djl.fsdp.config.MixedPrecision#FP16}. */
    public static final ai.djl.fsdp.config.MixedPrecision FP16 =
            ai.djl.fsdp.config.MixedPrecision.FP16;

    private MixedPrecision() {}

    /**
     * See {@link ai.djl.fsdp.config.MixedPrecision#of}.
     *
     * @param name the value, in any case
     * @return the policy, reducing in float32
     */
    public static ai.djl.fsdp.config.MixedPrecision of(String name) {
        return ai.djl.fsdp.config.MixedPrecision.of(name);
    }
}
