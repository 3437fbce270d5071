package ai.djl.fsdp.zoo.generate;

import java.util.List;

/**
 * How {@link Generator} picks tokens: greedy when the temperature is 0, otherwise sampling from the
 * softmax of {@code logits / temperature}, restricted to the {@code top_k} most likely tokens and
 * then to the smallest set whose probability reaches {@code top_p}. A fixed seed makes sampling
 * reproducible.
 */
public final class GenerationConfig {

    private final int maxNewTokens;
    private final float temperature;
    private final int topK;
    private final float topP;
    private final long seed;
    private final List<Long> stopTokens;

    private GenerationConfig(Builder builder) {
        maxNewTokens = builder.maxNewTokens;
        temperature = builder.temperature;
        topK = builder.topK;
        topP = builder.topP;
        seed = builder.seed;
        stopTokens = builder.stopTokens;
    }

    /**
     * Returns a builder.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Returns the most tokens to generate.
     *
     * @return the token budget
     */
    public int getMaxNewTokens() {
        return maxNewTokens;
    }

    /**
     * Returns the temperature; 0 means greedy.
     *
     * @return the temperature
     */
    public float getTemperature() {
        return temperature;
    }

    /**
     * Returns {@code top_k}; 0 means no limit.
     *
     * @return top k
     */
    public int getTopK() {
        return topK;
    }

    /**
     * Returns {@code top_p}; 1 means no limit.
     *
     * @return top p
     */
    public float getTopP() {
        return topP;
    }

    /**
     * Returns the sampling seed.
     *
     * @return the seed
     */
    public long getSeed() {
        return seed;
    }

    /**
     * Returns the tokens that end generation (they are included in the output).
     *
     * @return the stop tokens
     */
    public List<Long> getStopTokens() {
        return stopTokens;
    }

    /** The builder of {@link GenerationConfig}. */
    public static final class Builder {

        private int maxNewTokens = 32;
        private float temperature;
        private int topK;
        private float topP = 1;
        private long seed = 42;
        private List<Long> stopTokens = List.of();

        Builder() {}

        /**
         * Sets the most tokens to generate (default 32).
         *
         * @param maxNewTokens the budget
         * @return this builder
         */
        public Builder optMaxNewTokens(int maxNewTokens) {
            this.maxNewTokens = maxNewTokens;
            return this;
        }

        /**
         * Sets the temperature (default 0: greedy).
         *
         * @param temperature the temperature, 0 or more
         * @return this builder
         */
        public Builder optTemperature(float temperature) {
            this.temperature = temperature;
            return this;
        }

        /**
         * Sets {@code top_k} (default 0: all tokens).
         *
         * @param topK the number of most likely tokens to sample among
         * @return this builder
         */
        public Builder optTopK(int topK) {
            this.topK = topK;
            return this;
        }

        /**
         * Sets {@code top_p} (default 1: no nucleus cut).
         *
         * @param topP the probability mass to sample within, in {@code (0, 1]}
         * @return this builder
         */
        public Builder optTopP(float topP) {
            this.topP = topP;
            return this;
        }

        /**
         * Sets the sampling seed (default 42).
         *
         * @param seed the seed
         * @return this builder
         */
        public Builder optSeed(long seed) {
            this.seed = seed;
            return this;
        }

        /**
         * Sets the tokens that end generation, usually the model's {@code eos_token_id}s.
         *
         * @param stopTokens the stop tokens
         * @return this builder
         */
        public Builder optStopTokens(List<Long> stopTokens) {
            this.stopTokens = List.copyOf(stopTokens);
            return this;
        }

        /**
         * Builds the configuration.
         *
         * @return the configuration
         * @throws IllegalArgumentException if a setting is out of range
         */
        public GenerationConfig build() {
            if (maxNewTokens < 0) {
                throw new IllegalArgumentException(
                        "max_new_tokens must be 0 or more, got " + maxNewTokens);
            }
            if (!(temperature >= 0)) {
                throw new IllegalArgumentException(
                        "temperature must be 0 (greedy) or more, got " + temperature);
            }
            if (topK < 0) {
                throw new IllegalArgumentException("top_k must be 0 (off) or more, got " + topK);
            }
            if (!(topP > 0 && topP <= 1)) {
                throw new IllegalArgumentException("top_p must be in (0, 1], got " + topP);
            }
            return new GenerationConfig(this);
        }
    }
}
