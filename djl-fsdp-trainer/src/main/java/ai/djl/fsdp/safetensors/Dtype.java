package ai.djl.fsdp.safetensors;

import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;

/**
 * The element types of the safetensors format, by the names its header uses.
 *
 * <p>{@link #BF16} has no DJL counterpart that is safe to create (DJL's JNI aborts the JVM when
 * asked for a bfloat16 tensor), so readers widen it to float32 (through libtorch's shim); see
 * {@link #readableAs()}.
 */
public enum Dtype {
    BOOL(1, DataType.BOOLEAN),
    U8(1, DataType.UINT8),
    I8(1, DataType.INT8),
    I16(2, DataType.INT16),
    I32(4, DataType.INT32),
    I64(8, DataType.INT64),
    F16(2, DataType.FLOAT16),
    BF16(2, null),
    F32(4, DataType.FLOAT32),
    F64(8, DataType.FLOAT64);

    private final int bytes;
    private final DataType dataType;

    Dtype(int bytes, DataType dataType) {
        this.bytes = bytes;
        this.dataType = dataType;
    }

    /**
     * Returns the size of one element in bytes.
     *
     * @return the size of one element in bytes
     */
    public int bytes() {
        return bytes;
    }

    /**
     * Returns the DJL type a tensor of this element type is read into: the same type, except {@link
     * #BF16}, which is widened exactly to {@link DataType#FLOAT32}.
     *
     * @return the DJL type a reader produces
     */
    public DataType readableAs() {
        return dataType == null ? DataType.FLOAT32 : dataType;
    }

    /**
     * Returns the precision an array is cast to for a tensor of this type.
     *
     * @return {@link Precision#FLOAT32}, {@link Precision#BFLOAT16} or {@link Precision#FLOAT16}
     * @throws IllegalArgumentException for a type that is none of those
     */
    public Precision precision() {
        return this == BF16 ? Precision.BFLOAT16 : Precision.of(readableAs());
    }

    /**
     * Returns the safetensors type that stores a DJL type without conversion.
     *
     * @param dataType a DJL type
     * @return the matching safetensors type
     * @throws IllegalArgumentException if safetensors cannot hold the type
     */
    public static Dtype of(DataType dataType) {
        for (Dtype dtype : values()) {
            if (dtype.dataType == dataType) {
                return dtype;
            }
        }
        throw new IllegalArgumentException("safetensors has no element type for DJL's " + dataType);
    }

    /**
     * Returns the safetensors type that stores an array's elements without conversion, bfloat16
     * arrays (which DJL reports as {@code UNKNOWN}) included.
     *
     * @param array a PyTorch-engine array
     * @return the matching safetensors type
     * @throws IllegalArgumentException if safetensors cannot hold the type
     */
    public static Dtype ofArray(NDArray array) {
        DataType type = TensorMemory.dataType(array);
        return type == DataType.BFLOAT16 ? BF16 : of(type);
    }

    /**
     * Parses a header's dtype name.
     *
     * @param name the name, such as {@code "F32"}
     * @return the element type, or null if the name is not a supported type
     */
    static Dtype parse(String name) {
        for (Dtype dtype : values()) {
            if (dtype.name().equals(name)) {
                return dtype;
            }
        }
        return null;
    }
}
