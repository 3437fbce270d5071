package ai.djl.fsdp.optim;

import ai.djl.fsdp.internal.param.FlatLayout;
import ai.djl.fsdp.internal.param.FlatParameter;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.ndarray.NDArray;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.util.Pair;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.BiPredicate;
import java.util.regex.Pattern;

/**
 * PyTorch's parameter groups on flat parameters: which parameters the optimizer decays, and by how
 * much it scales their learning rate, decided per original parameter by rules on its dotted name
 * ({@code transformer.h.0.ln_1.weight}) and the block that owns it. A flat shard mixes a unit's
 * weights, biases and normalization weights, so a shard whose elements differ gets one factor per
 * element (4 bytes per element of the shard, half of what Adam's two moments take), and a shard
 * whose elements agree gets one number.
 *
 * <pre>{@code
 * ParameterGroups groups = ParameterGroups.builder()
 *         .optNoDecay(ParameterGroups.biasesAndNorms())
 *         .build();
 * }</pre>
 */
public final class ParameterGroups {

    /** Every parameter decayed, every learning rate unscaled. */
    public static final ParameterGroups ALL = builder().build();

    /** Hugging Face's name patterns of parameters left undecayed (matched in lower case). */
    private static final List<Pattern> NO_DECAY_NAMES =
            List.of(
                    Pattern.compile("bias"),
                    Pattern.compile("layernorm"),
                    Pattern.compile("rmsnorm"),
                    Pattern.compile("(?:^|\\.)norm(?:$|\\.)"),
                    Pattern.compile("_norm(?:$|\\.)"));

    private final BiPredicate<String, Block> noDecay;
    private final BiPredicate<String, Block> scaled;
    private final float learningRateScale;

    private ParameterGroups(Builder builder) {
        noDecay = builder.noDecay;
        scaled = builder.scaled;
        learningRateScale = builder.learningRateScale;
    }

    /**
     * Returns a builder: every parameter decayed, every learning rate unscaled, until a rule says
     * otherwise.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Hugging Face Trainer's rule ({@code get_decay_parameter_names}): no weight decay for biases
     * and normalization weights, that is for a parameter of a layer-norm block (a block whose class
     * name ends in {@code LayerNorm} or {@code RMSNorm}), or whose lower-cased name contains {@code
     * bias}, {@code layernorm} or {@code rmsnorm}, or has a {@code norm} or {@code *_norm} path
     * segment. Embeddings and every other weight decay.
     *
     * @return the rule, true for a parameter left undecayed
     */
    public static BiPredicate<String, Block> biasesAndNorms() {
        return (name, block) -> {
            String type = block.getClass().getSimpleName().toLowerCase(Locale.ROOT);
            if (type.endsWith("layernorm") || type.endsWith("rmsnorm")) {
                return true;
            }
            String lower = name.toLowerCase(Locale.ROOT);
            return NO_DECAY_NAMES.stream().anyMatch(p -> p.matcher(lower).find());
        };
    }

    /**
     * Returns whether a parameter is decayed.
     *
     * @param name its dotted name
     * @param block the block that owns it
     * @return false if the no-decay rule holds for it
     */
    public boolean decays(String name, Block block) {
        return !noDecay.test(name, block);
    }

    /**
     * Returns the factor of a parameter's learning rate.
     *
     * @param name its dotted name
     * @param block the block that owns it
     * @return the scale of the learning-rate rule if it holds, else 1
     */
    public float learningRateScale(String name, Block block) {
        return scaled.test(name, block) ? learningRateScale : 1f;
    }

    /**
     * Returns the factors of one flat parameter's shard on this rank, from the names and owners of
     * the parameters it holds.
     *
     * @param flat the flat parameter
     * @param owners each parameter's dotted name and owning block ({@link #ownersOf})
     * @param decays whether the optimizer decays at all: without weight decay its factors are not
     *     kept
     * @return the weight-decay and learning-rate factors
     * @throws IllegalArgumentException if a parameter of {@code flat} is not in {@code owners}
     */
    public ShardFactors shardFactors(
            FlatParameter flat, Map<Parameter, Pair<String, Block>> owners, boolean decays) {
        List<Parameter> parameters = flat.getParameters();
        float[] decay = new float[parameters.size()];
        float[] scale = new float[parameters.size()];
        for (int i = 0; i < parameters.size(); i++) {
            Pair<String, Block> owner = owners.get(parameters.get(i));
            if (owner == null) {
                throw new IllegalArgumentException(
                        "Parameter "
                                + parameters.get(i).getName()
                                + " of "
                                + flat.getId()
                                + " is not in the model's block tree");
            }
            decay[i] = decays(owner.getKey(), owner.getValue()) ? 1f : 0f;
            scale[i] = learningRateScale(owner.getKey(), owner.getValue());
        }
        return new ShardFactors(
                decays ? factor(flat, decay) : ElementFactor.ONE, factor(flat, scale));
    }

    /**
     * Returns every parameter of a block tree with its dotted name and the block that owns it; a
     * parameter reachable under several names (a tied head) keeps the first, as {@link
     * StateDict#parameters} does.
     *
     * @param root the model's block
     * @return the owners by parameter
     */
    public static Map<Parameter, Pair<String, Block>> ownersOf(Block root) {
        Map<Parameter, Pair<String, Block>> owners = new IdentityHashMap<>();
        StateDict.modules(root)
                .forEach(
                        (path, block) -> {
                            for (Pair<String, Parameter> p : block.getDirectParameters()) {
                                Parameter parameter = p.getValue();
                                owners.putIfAbsent(
                                        parameter,
                                        new Pair<>(
                                                StateDict.join(path, parameter.getName()), block));
                            }
                        });
        return owners;
    }

    /** One value per shard if the shard's elements agree, else one per element. */
    private static ElementFactor factor(FlatParameter flat, float[] values) {
        FlatLayout layout = flat.getLayout();
        int shard = flat.getShardIndex();
        float[] perElement = new float[Math.toIntExact(layout.getShardNumel())];
        Float common = null;
        boolean uniform = true;
        for (int i = 0; i < values.length; i++) {
            FlatLayout.Overlap overlap = layout.overlap(i, shard);
            if (overlap == null) {
                continue;
            }
            int from = Math.toIntExact(overlap.shardOffset());
            Arrays.fill(perElement, from, from + Math.toIntExact(overlap.size()), values[i]);
            if (common == null) {
                common = values[i];
            } else if (common != values[i]) {
                uniform = false;
            }
        }
        if (uniform) {
            // A shard of padding alone has no factor that matters.
            return ElementFactor.uniform(common == null ? 1f : common);
        }
        // On the shard's device; detached, as an optimizer's state is.
        NDArray array = flat.getShard().getManager().create(perElement);
        array.detach();
        return ElementFactor.perElement(array);
    }

    /**
     * The factors of one shard.
     *
     * @param decay the weight decay's, 0 for an undecayed element
     * @param learningRateScale the learning rate's
     */
    public record ShardFactors(ElementFactor decay, ElementFactor learningRateScale) {

        /** Returns the bytes the per-element factors take. */
        public long bytes() {
            return decay.bytes() + learningRateScale.bytes();
        }

        /** Frees the per-element factors. */
        public void close() {
            for (ElementFactor factor : List.of(decay, learningRateScale)) {
                if (!factor.isUniform()) {
                    factor.getPerElement().close();
                }
            }
        }
    }

    /** Builds {@link ParameterGroups}. */
    public static final class Builder {

        private BiPredicate<String, Block> noDecay = (name, block) -> false;
        private BiPredicate<String, Block> scaled = (name, block) -> false;
        private float learningRateScale = 1f;

        private Builder() {}

        /**
         * Sets which parameters are not decayed, such as {@link #biasesAndNorms()}.
         *
         * @param rule true for a parameter (dotted name, owning block) left undecayed
         * @return this builder
         */
        public Builder optNoDecay(BiPredicate<String, Block> rule) {
            this.noDecay = Objects.requireNonNull(rule, "rule");
            return this;
        }

        /**
         * Scales the learning rate of some parameters, as a parameter group with its own {@code lr}
         * does.
         *
         * @param rule true for a parameter (dotted name, owning block) whose rate is scaled
         * @param scale the factor, finite and at least 0
         * @return this builder
         */
        public Builder optLearningRateScale(BiPredicate<String, Block> rule, float scale) {
            if (!(scale >= 0f) || Float.isInfinite(scale)) {
                throw new IllegalArgumentException(
                        "A learning-rate scale must be finite and >= 0, got " + scale);
            }
            this.scaled = Objects.requireNonNull(rule, "rule");
            this.learningRateScale = scale;
            return this;
        }

        /**
         * Builds the groups.
         *
         * @return the groups
         */
        public ParameterGroups build() {
            return new ParameterGroups(this);
        }
    }
}
