package ai.djl.fsdp.tensor.quant;

import ai.djl.ndarray.types.DataType;
import java.util.Locale;

/** The width of a quantized code: 8 bits a value, or 4 bits (two values a byte). */
public enum QuantizedBits {
    /** Codes {@code -127..127}, one signed byte each. */
    INT8(8, 127, DataType.INT8),
    /** Codes {@code -7..7}, two a byte: the first value in the high nibble, offset by 8. */
    INT4(4, 7, DataType.UINT8);

    private final int bits;
    private final int maxCode;
    private final DataType codeType;

    QuantizedBits(int bits, int maxCode, DataType codeType) {
        this.bits = bits;
        this.maxCode = maxCode;
        this.codeType = codeType;
    }

    /**
     * Returns the width named {@code name}: {@code int8} or {@code int4}, in any case.
     *
     * @param name the name
     * @return the width
     * @throws IllegalArgumentException for another name
     */
    public static QuantizedBits of(String name) {
        for (QuantizedBits value : values()) {
            if (value.getName().equalsIgnoreCase(name)) {
                return value;
            }
        }
        throw new IllegalArgumentException(
                "Unknown quantized width '" + name + "': use int8 or int4");
    }

    /** Returns the width's name, {@code int8} or {@code int4}. */
    public String getName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Returns the bits per value. */
    public int getBits() {
        return bits;
    }

    /** Returns the largest code's magnitude: a block's absmax maps to it. */
    public int getMaxCode() {
        return maxCode;
    }

    /** Returns the element type the codes are stored in (int8, or uint8 for packed pairs). */
    public DataType getCodeType() {
        return codeType;
    }

    /**
     * Returns how many code elements {@code values} values take.
     *
     * @param values a whole number of blocks' values (an even count for 4 bits)
     * @return the codes' element count
     */
    public long codeElements(long values) {
        return values * bits / Byte.SIZE;
    }
}
