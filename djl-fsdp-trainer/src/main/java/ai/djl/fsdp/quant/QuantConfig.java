package ai.djl.fsdp.quant;

/**
 * How a weight is quantized to 4 bits, with bitsandbytes' meaning: the code ({@code
 * bnb_4bit_quant_type}), the block size (64) and whether the block scales are quantized again
 * ({@code bnb_4bit_use_double_quant}).
 *
 * <pre>{@code
 * QuantConfig config = QuantConfig.builder().setQuantType(QuantType.NF4).optNested(true).build();
 * QuantizedWeight weight = QuantizedWeight.quantize(values, new long[] {out, in}, config);
 * }</pre>
 */
public final class QuantConfig {

    /** bitsandbytes' block size for 4-bit weights. */
    public static final int DEFAULT_BLOCK_SIZE = 64;

    private final QuantType quantType;
    private final int blockSize;
    private final boolean nested;

    private QuantConfig(Builder builder) {
        this.quantType = builder.quantType;
        this.blockSize = builder.blockSize;
        this.nested = builder.nested;
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
     * Returns the 4-bit code.
     *
     * @return the code
     */
    public QuantType getQuantType() {
        return quantType;
    }

    /**
     * Returns the number of values that share a scale.
     *
     * @return the block size
     */
    public int getBlockSize() {
        return blockSize;
    }

    /**
     * Returns whether the block scales are quantized again to 8 bits.
     *
     * @return true for double quantization
     */
    public boolean isNested() {
        return nested;
    }

    /** Builds a {@link QuantConfig}. */
    public static final class Builder {

        private QuantType quantType;
        private int blockSize = DEFAULT_BLOCK_SIZE;
        private boolean nested;

        private Builder() {}

        /**
         * Sets the 4-bit code (required).
         *
         * @param quantType NF4 or FP4
         * @return this builder
         */
        public Builder setQuantType(QuantType quantType) {
            this.quantType = quantType;
            return this;
        }

        /**
         * Sets the block size (default 64; bitsandbytes accepts the powers of two from 32 to 4096).
         *
         * @param blockSize the number of values a scale covers
         * @return this builder
         */
        public Builder optBlockSize(int blockSize) {
            this.blockSize = blockSize;
            return this;
        }

        /**
         * Sets whether the block scales are quantized again (default false).
         *
         * @param nested true for double quantization
         * @return this builder
         */
        public Builder optNested(boolean nested) {
            this.nested = nested;
            return this;
        }

        /**
         * Builds the configuration.
         *
         * @return the configuration
         * @throws IllegalArgumentException if the code is missing or the block size is not one
         *     bitsandbytes accepts
         */
        public QuantConfig build() {
            if (quantType == null) {
                throw new IllegalArgumentException(
                        "a 4-bit quantization needs its type: nf4 or fp4");
            }
            if (blockSize < 32 || blockSize > 4096 || Integer.bitCount(blockSize) != 1) {
                throw new IllegalArgumentException(
                        "the 4-bit block size "
                                + blockSize
                                + " is not one of bitsandbytes' 32, 64, ..., 4096");
            }
            return new QuantConfig(this);
        }
    }
}
