package ai.djl.fsdp.trainer;

import ai.djl.fsdp.internal.config.CollectiveQuantizers;
import ai.djl.fsdp.tensor.quant.QuantizedBits;
import ai.djl.fsdp.tensor.quant.SymmetricQuantizer;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;

/**
 * Which collectives send quantized values, ZeRO++'s qwZ and qgZ: a unit's weights gathered as int8
 * with one scale per block, each rank restoring them in the compute type (the shards, the master
 * weights and the optimizer state stay exact); its gradients quantized once to int8 or int4,
 * exchanged all-to-all and summed in float32 on the rank that owns each piece. Blockwise symmetric
 * absmax ({@link SymmetricQuantizer}); frozen parameters are gathered as they are stored. Off by
 * default ({@link #NONE}). Under hybrid sharding, {@link Scope#INTER_NODE} quantizes only what
 * crosses between nodes instead: the gradient shards' average across the replicate groups, the
 * shard groups' gathers and reduce-scatters inside a node staying in full precision.
 *
 * <pre>{@code
 * CommunicationQuantization q = CommunicationQuantization.builder()
 *         .optWeights(QuantizedBits.INT8)
 *         .optGradients(QuantizedBits.INT4)
 *         .build();
 * CommunicationQuantization same = CommunicationQuantization.parse("weights=int8,gradients=int4");
 * }</pre>
 */
public final class CommunicationQuantization {

    /** Everything sent as it is computed. */
    public static final CommunicationQuantization NONE = builder().build();

    /**
     * The default number of values that share a scale: 64, the smallest. On the README's job over
     * three seeds, int8 weights in blocks of 256 missed the aim of an eval loss within 3% and an
     * exact match within 2 points of unquantized training, in blocks of 64 they met it
     * (docs/benchmarks.md), for 4.6% more bytes than blocks of 256 in int8 and 9.1% in int4.
     */
    public static final int DEFAULT_BLOCK_SIZE = 64;

    private final QuantizedBits weights;
    private final QuantizedBits gradients;
    private final int blockSize;
    private final Scope scope;
    private final boolean errorFeedback;

    /** Which collectives the setting quantizes. */
    public enum Scope {
        /** The shard groups' weight gathers and gradient reductions, as the setting names them. */
        ALL("all"),
        /**
         * Under hybrid sharding only the traffic between nodes: the gradient shards' average across
         * the replicate groups, in the gradients' width (a quantized reduce-scatter and
         * all-gather); the shard groups' collectives inside a node stay in full precision.
         */
        INTER_NODE("inter-node");

        private final String name;

        Scope(String name) {
            this.name = name;
        }

        /** Returns the scope's name in the setting's text, {@code all} or {@code inter-node}. */
        public String getName() {
            return name;
        }

        static Scope of(String name) {
            for (Scope scope : values()) {
                if (scope.name.equals(name)) {
                    return scope;
                }
            }
            throw new IllegalArgumentException(
                    "Unknown communication quantization scope '"
                            + name
                            + "': use all or inter-node");
        }
    }

    private CommunicationQuantization(Builder builder) {
        weights = builder.weights;
        gradients = builder.gradients;
        blockSize = builder.blockSize;
        scope = builder.scope;
        errorFeedback = builder.errorFeedback;
    }

    /** Returns a builder: nothing quantized, blocks of {@value #DEFAULT_BLOCK_SIZE}. */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Reads a setting as the command line and Accelerate's config key give it: {@code none}, or
     * comma-separated {@code weights=none|int8}, {@code gradients=none|int8|int4}, {@code
     * block=64..2048} and {@code scope=all|inter-node}, any of them left out for its default (none,
     * none, 64, all).
     *
     * @param text the setting
     * @return the quantization
     * @throws IllegalArgumentException naming the part that is wrong and what it may be
     */
    public static CommunicationQuantization parse(String text) {
        String setting = text.trim().toLowerCase(Locale.ROOT);
        Builder builder = builder();
        if (setting.isEmpty() || "none".equals(setting)) {
            return builder.build();
        }
        for (String part : setting.split(",")) {
            String[] pair = part.trim().split("=", 2);
            String value = pair.length == 2 ? pair[1].trim() : "";
            switch (pair[0].trim()) {
                case "weights":
                    builder.optWeights(bits(value));
                    break;
                case "gradients":
                    builder.optGradients(bits(value));
                    break;
                case "block":
                    try {
                        builder.optBlockSize(Integer.parseInt(value));
                    } catch (NumberFormatException e) {
                        throw new IllegalArgumentException(
                                "Communication quantization's block must be a number of values,"
                                        + " got '"
                                        + value
                                        + "'",
                                e);
                    }
                    break;
                case "scope":
                    builder.optScope(Scope.of(value));
                    break;
                case "error-feedback":
                    builder.optErrorFeedback(onOff(value));
                    break;
                default:
                    throw new IllegalArgumentException(
                            "Communication quantization '"
                                    + text
                                    + "' has an unknown part '"
                                    + part.trim()
                                    + "': give none, or comma-separated weights=none|int8,"
                                    + " gradients=none|int8|int4, block=64..2048,"
                                    + " scope=all|inter-node and error-feedback=on|off");
            }
        }
        return builder.build();
    }

    private static boolean onOff(String value) {
        if (!"on".equals(value) && !"off".equals(value)) {
            throw new IllegalArgumentException(
                    "Communication quantization's error-feedback is on or off, got '"
                            + value
                            + "'");
        }
        return "on".equals(value);
    }

    /** Returns null for {@code none}, else the width. */
    private static QuantizedBits bits(String value) {
        return "none".equals(value) ? null : QuantizedBits.of(value);
    }

    /** Returns the width weights are gathered in, empty when they are gathered exactly. */
    public Optional<QuantizedBits> getWeights() {
        return Optional.ofNullable(weights);
    }

    /** Returns the width gradients are reduced in, empty when they are reduced exactly. */
    public Optional<QuantizedBits> getGradients() {
        return Optional.ofNullable(gradients);
    }

    /** Returns the number of values that share a scale. */
    public int getBlockSize() {
        return blockSize;
    }

    /** Returns which collectives are quantized. */
    public Scope getScope() {
        return scope;
    }

    /**
     * Returns whether each rank carries what quantizing took off its gradient into its next
     * reduction (error feedback).
     */
    public boolean isErrorFeedback() {
        return errorFeedback;
    }

    /** Returns whether anything is quantized. */
    public boolean isEnabled() {
        return weights != null || gradients != null;
    }

    /** Returns the quantizer of weights' gathers, empty when they are exact. */
    Optional<SymmetricQuantizer> weightQuantizer() {
        return quantizer(weights);
    }

    /** Returns the quantizer of gradients' reductions in the shard groups, empty when exact. */
    Optional<SymmetricQuantizer> gradientQuantizer() {
        return scope == Scope.ALL ? quantizer(gradients) : Optional.empty();
    }

    /** Returns the quantizer of gradients' averages across replicate groups, empty when exact. */
    Optional<SymmetricQuantizer> replicaQuantizer() {
        return scope == Scope.INTER_NODE ? quantizer(gradients) : Optional.empty();
    }

    /** Returns the quantizers of a step's collectives. */
    CollectiveQuantizers quantizers() {
        return new CollectiveQuantizers(
                weightQuantizer().orElse(null),
                gradientQuantizer().orElse(null),
                errorFeedback,
                replicaQuantizer().orElse(null));
    }

    private Optional<SymmetricQuantizer> quantizer(QuantizedBits bits) {
        return Optional.ofNullable(bits).map(b -> SymmetricQuantizer.of(b, blockSize));
    }

    /** Returns the setting as {@link #parse} reads it. */
    @Override
    public String toString() {
        if (!isEnabled()) {
            return "none";
        }
        return "weights="
                + getWeights().map(QuantizedBits::getName).orElse("none")
                + ",gradients="
                + getGradients().map(QuantizedBits::getName).orElse("none")
                + ",block="
                + blockSize
                + (scope == Scope.ALL ? "" : ",scope=" + scope.getName())
                + (errorFeedback ? ",error-feedback=on" : "");
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof CommunicationQuantization that
                && weights == that.weights
                && gradients == that.gradients
                && blockSize == that.blockSize
                && scope == that.scope
                && errorFeedback == that.errorFeedback;
    }

    @Override
    public int hashCode() {
        return Objects.hash(weights, gradients, blockSize, scope, errorFeedback);
    }

    /** Builds a {@link CommunicationQuantization}. */
    public static final class Builder {

        private QuantizedBits weights;
        private QuantizedBits gradients;
        private int blockSize = DEFAULT_BLOCK_SIZE;
        private Scope scope = Scope.ALL;
        private boolean errorFeedback;

        private Builder() {}

        /**
         * Sets the width weights are gathered in (default: exact).
         *
         * @param weights {@link QuantizedBits#INT8}, or null for exact
         * @return this builder
         * @throws IllegalArgumentException for int4, which forward would feel at every layer
         */
        public Builder optWeights(QuantizedBits weights) {
            if (weights == QuantizedBits.INT4) {
                throw new IllegalArgumentException(
                        "Weights are gathered in int8 at the narrowest (ZeRO++'s qwZ); int4 is for"
                                + " gradients: use weights=int8");
            }
            this.weights = weights;
            return this;
        }

        /**
         * Sets the width gradients are reduced in (default: exact).
         *
         * @param gradients {@link QuantizedBits#INT8} or {@link QuantizedBits#INT4}, or null for
         *     exact
         * @return this builder
         */
        public Builder optGradients(QuantizedBits gradients) {
            this.gradients = gradients;
            return this;
        }

        /**
         * Sets how many values share a scale (default {@value #DEFAULT_BLOCK_SIZE}).
         *
         * @param blockSize an even number from 64 to 2048
         * @return this builder
         * @throws IllegalArgumentException for another
         */
        public Builder optBlockSize(int blockSize) {
            SymmetricQuantizer.checkBlockSize(blockSize);
            this.blockSize = blockSize;
            return this;
        }

        /**
         * Sets which collectives are quantized (default {@link Scope#ALL}).
         *
         * @param scope {@link Scope#ALL}, or {@link Scope#INTER_NODE} for hybrid sharding's traffic
         *     between nodes alone
         * @return this builder
         */
        public Builder optScope(Scope scope) {
            this.scope = Objects.requireNonNull(scope, "scope");
            return this;
        }

        /**
         * Sets whether each rank adds what quantizing took off its last gradient to the next one
         * before quantizing it (default off), so the rounding does not accumulate over steps. It
         * costs a float32 residual the size of each full flat gradient on every rank.
         *
         * @param errorFeedback true to carry the residual
         * @return this builder
         */
        public Builder optErrorFeedback(boolean errorFeedback) {
            this.errorFeedback = errorFeedback;
            return this;
        }

        /**
         * Builds the setting.
         *
         * @return the setting
         * @throws IllegalArgumentException for error feedback without quantized gradients in the
         *     shard groups
         */
        public CommunicationQuantization build() {
            if (errorFeedback && (gradients == null || scope != Scope.ALL)) {
                throw new IllegalArgumentException(
                        "error-feedback=on carries the rounding of quantized gradients into the"
                                + " next step: give gradients=int8 or int4 with scope=all, or"
                                + " error-feedback=off");
            }
            return new CommunicationQuantization(this);
        }
    }
}
