package ai.djl.fsdp.tensor;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.engine.PtNDManager;
import java.util.Locale;
import java.util.function.ToIntFunction;

/**
 * The floating-point types of mixed precision, and the one safe way to make arrays of them and cast
 * arrays between them.
 *
 * <p>DJL's JNI aborts the JVM (a bare C++ {@code throw;}) when a creation or cast call ({@code
 * zeros}, {@code create}, {@code toType}, ...) is given {@code DataType.BFLOAT16}; and DJL reads a
 * bfloat16 array's type as {@code UNKNOWN}, which it cannot create either. So arrays of these types
 * are made here through libtorch's C shim ({@code empty_strided}, then {@code copy_} for values),
 * which autograd sees as an ordinary copy: a cast is differentiable. Code that takes an element
 * type from an array or a setting and hands it to DJL passes it through {@link #djlType} first,
 * which throws instead of letting the JVM die; {@link #cast(NDArray, DataType)} is the cast to use
 * everywhere.
 */
public enum Precision {
    /** IEEE single precision: master weights, optimizer state, loss. */
    FLOAT32(DataType.FLOAT32, "fp32", AotiTorch::aoti_torch_dtype_float32),
    /** bfloat16: float32's range, 8 significant bits. */
    BFLOAT16(DataType.BFLOAT16, "bf16", AotiTorch::aoti_torch_dtype_bfloat16),
    /** IEEE half precision: 11 significant bits, range to 65504 (needs loss scaling). */
    FLOAT16(DataType.FLOAT16, "fp16", AotiTorch::aoti_torch_dtype_float16);

    /** The quiet NaN a NaN rounds to in bfloat16 and float16. */
    private static final int BFLOAT16_NAN = 0x7FC0;

    private static final int FLOAT16_NAN = 0x7E00;

    /** A shim code not yet asked for. */
    private static final int UNKNOWN_CODE = Integer.MIN_VALUE;

    private final DataType dataType;
    private final String shortName;
    private final ToIntFunction<AotiTorch> shimType;
    // A constant of the loaded libtorch, asked once (racing threads ask for the same value).
    private volatile int shimCode = UNKNOWN_CODE;

    Precision(DataType dataType, String shortName, ToIntFunction<AotiTorch> shimType) {
        this.dataType = dataType;
        this.shortName = shortName;
        this.shimType = shimType;
    }

    /**
     * Returns the precision of a setting's value: {@code fp32}, {@code bf16}, {@code fp16} (as
     * Accelerate's {@code mixed_precision} and the command line name them; Accelerate's {@code no}
     * is {@code fp32}), or {@code float32}, {@code bfloat16}, {@code float16}, in any case.
     *
     * @param name the value
     * @return the precision
     * @throws IllegalArgumentException naming the accepted values
     */
    public static Precision of(String name) {
        String key = name.trim().toLowerCase(Locale.ROOT);
        for (Precision precision : values()) {
            if (precision.shortName.equals(key) || precision.name().equalsIgnoreCase(key)) {
                return precision;
            }
        }
        if ("no".equals(key)) {
            return FLOAT32;
        }
        throw new IllegalArgumentException(
                "precision '"
                        + name
                        + "' is not one of fp32, bf16, fp16 (or float32, bfloat16,"
                        + " float16)");
    }

    /**
     * Returns the precision of an element type.
     *
     * @param type {@code FLOAT32}, {@code BFLOAT16} or {@code FLOAT16}
     * @return the precision
     * @throws IllegalArgumentException for any other type
     */
    public static Precision of(DataType type) {
        for (Precision precision : values()) {
            if (precision.dataType == type) {
                return precision;
            }
        }
        throw new IllegalArgumentException(
                "element type "
                        + type
                        + " is not a mixed-precision type (float32, bfloat16, float16)");
    }

    /**
     * Returns the precision of an array as libtorch knows it (bfloat16 included), or null for any
     * other element type.
     *
     * @param array a PyTorch-engine array
     * @return its precision, or null
     */
    public static Precision ofArray(NDArray array) {
        // DJL's own type, read once per array, answers but for bfloat16 (which DJL reads as
        // UNKNOWN); only then is libtorch's shim asked.
        DataType type = array.getDataType();
        if (type == DataType.FLOAT32) {
            return FLOAT32;
        } else if (type == DataType.FLOAT16) {
            return FLOAT16;
        } else if (type != DataType.UNKNOWN && type != DataType.BFLOAT16) {
            return null;
        }
        AotiTorch torch = AotiTorch.cpu();
        int dtype = DirectShim.dtype(TensorMemory.ptHandle(array));
        for (Precision precision : values()) {
            if (precision.shimType(torch) == dtype) {
                return precision;
            }
        }
        return null;
    }

    /**
     * Returns whether an array holds floating-point values, bfloat16 included (DJL reads a bfloat16
     * array's type as {@code UNKNOWN}, which is not floating to it).
     *
     * @param array a PyTorch-engine array
     * @return whether it can carry gradients
     */
    public static boolean isFloating(NDArray array) {
        DataType type = array.getDataType();
        return type == DataType.UNKNOWN ? ofArray(array) != null : type.isFloating();
    }

    /**
     * Casts {@code array} to the precision of {@code like}: how a block that computes in float32
     * (normalization statistics, softmax) hands back its input's type.
     *
     * @param array the array to cast
     * @param like an array of the wanted type
     * @return {@code array} itself when the types agree or {@code like} is not float32, bfloat16 or
     *     float16; else the cast (differentiable)
     */
    public static NDArray castLike(NDArray array, NDArray like) {
        Precision precision = ofArray(like);
        return precision == null ? array : precision.cast(array);
    }

    /**
     * Returns {@code type} if DJL may create arrays of it or cast to it: the guard before every DJL
     * creation or cast call whose type comes from an array or a setting.
     *
     * @param type the element type
     * @param role how the caller names the array in the error, such as {@code "gradient buffer"}
     * @return {@code type}
     * @throws IllegalArgumentException for {@code BFLOAT16}, {@code UNKNOWN} (what DJL reads from a
     *     bfloat16 array) or null, on which DJL's JNI would abort the JVM
     */
    public static DataType djlType(DataType type, String role) {
        if (type == null || type == DataType.BFLOAT16 || type == DataType.UNKNOWN) {
            throw new IllegalArgumentException(
                    "The "
                            + role
                            + " has element type "
                            + type
                            + ", which DJL cannot create or cast to (its JNI aborts the JVM): make"
                            + " it with Precision.empty/zeros/cast, which use libtorch's C shim");
        }
        return type;
    }

    /**
     * Casts an array to any element type without ever handing DJL a type it aborts on: the three
     * floating types go through the shim, other types through DJL's {@code toType} after {@link
     * #djlType}.
     *
     * @param array a PyTorch-engine array of any type, bfloat16 included
     * @param type the target type
     * @return {@code array} itself when it already has the type, else a new contiguous array in its
     *     manager and on its device (recorded by autograd when {@code array} requires gradients)
     * @throws IllegalArgumentException for {@code UNKNOWN} or null
     */
    public static NDArray cast(NDArray array, DataType type) {
        for (Precision precision : values()) {
            if (precision.dataType == type) {
                return precision.cast(array);
            }
        }
        return array.toType(djlType(type, "cast target"), false);
    }

    /**
     * Moves an array to a device without ever handing DJL a type it aborts on: an array of a type
     * DJL knows goes through DJL's {@code toDevice}, a bfloat16 one (which DJL reads as {@code
     * UNKNOWN} and whose type code it would pass to its JNI) is copied through the shim into an
     * array made on the target device.
     *
     * @param array a PyTorch-engine array of any type, bfloat16 included
     * @param device the target device
     * @param copy whether to copy even when the array is already on the device
     * @return {@code array} itself when it is on the device and no copy is asked, else a new array
     *     in its manager on the device
     * @throws IllegalArgumentException for an array of a type neither DJL nor this class knows
     */
    public static NDArray toDevice(NDArray array, Device device, boolean copy) {
        boolean here = array.getDevice().equals(device);
        if (array.getDataType() != DataType.UNKNOWN) {
            // DJL's toDevice is libtorch's to(), which returns the array itself on its own device
            // even when a copy is asked for: a copy then is a clone.
            return copy && here ? array.duplicate() : array.toDevice(device, copy);
        }
        if (here && !copy) {
            return array;
        }
        Precision precision = ofArray(array);
        if (precision == null) {
            throw new IllegalArgumentException(
                    "Cannot move an array of an element type DJL does not know to " + device);
        }
        NDArray target = precision.empty(array.getManager(), array.getShape(), device);
        TensorMemory.copy(array, target);
        return target;
    }

    /**
     * Returns DJL's element type of this precision; hand it only to {@link #cast(NDArray,
     * DataType)} and {@link #of(DataType)}, never to DJL itself (see {@link #djlType}).
     *
     * @return the element type
     */
    public DataType getDataType() {
        return dataType;
    }

    /**
     * Returns the short name: {@code fp32}, {@code bf16} or {@code fp16}.
     *
     * @return the name
     */
    public String getName() {
        return shortName;
    }

    /**
     * Returns a float32 value's bits in this precision, rounded to nearest even as libtorch's casts
     * round: float32's own bits, or bfloat16's or float16's in the low 16 bits (a value too large
     * for float16 becomes its infinity). What a cast computes, one value at a time, for code that
     * writes values straight into an array's memory.
     *
     * @param value the value
     * @return its bits in this precision; a NaN becomes a quiet NaN
     */
    public int bits(float value) {
        int w = Float.floatToRawIntBits(value);
        switch (this) {
            case BFLOAT16:
                if (Float.isNaN(value)) {
                    return BFLOAT16_NAN;
                }
                // Adding 0x7FFF, plus one when the kept bits are odd, carries exactly when the
                // dropped half is above one half, or one half with an odd result.
                return (w + 0x7FFF + ((w >>> 16) & 1)) >>> 16;
            case FLOAT16:
                return float16Bits(value, w);
            default:
                return w;
        }
    }

    /**
     * float16's bits by float arithmetic (the method of c10's and the FP16 library's conversion):
     * scaling by 2^112 then 2^-110 sends what float16 cannot hold to infinity, and adding a power
     * of two aligned with float16's last kept bit makes the float32 addition do the rounding, to
     * nearest even, subnormals included.
     */
    private static int float16Bits(float value, int w) {
        float base = (Math.abs(value) * 0x1p112f) * 0x1p-110f;
        int twice = w + w;
        int bias = twice & 0xFF000000;
        if (Integer.compareUnsigned(bias, 0x71000000) < 0) {
            bias = 0x71000000;
        }
        base = Float.intBitsToFloat((bias >>> 1) + 0x07800000) + base;
        int rounded = Float.floatToRawIntBits(base);
        int magnitude = ((rounded >>> 13) & 0x7C00) + (rounded & 0x0FFF);
        int sign = (w & 0x80000000) >>> 16;
        return sign | (Integer.compareUnsigned(twice, 0xFF000000) > 0 ? FLOAT16_NAN : magnitude);
    }

    /**
     * Returns the bytes of one element.
     *
     * @return 4 or 2
     */
    public int getBytes() {
        return dataType.getNumOfBytes();
    }

    /**
     * Creates an uninitialised contiguous array of this precision on the manager's device.
     *
     * @param manager the PyTorch-engine manager that will own the array
     * @param shape the shape
     * @return the new array
     */
    public NDArray empty(NDManager manager, Shape shape) {
        return empty(manager, shape, manager.getDevice());
    }

    /**
     * Creates an array of zeros of this precision on the manager's device.
     *
     * @param manager the PyTorch-engine manager that will own the array
     * @param shape the shape
     * @return the new array
     */
    public NDArray zeros(NDManager manager, Shape shape) {
        NDArray zeros = empty(manager, shape);
        try (NDArray zero = manager.zeros(new Shape(), DataType.FLOAT32)) {
            TensorMemory.copy(zero, zeros);
        }
        return zeros;
    }

    /**
     * Returns the array in this precision, rounding to nearest even.
     *
     * @param array a PyTorch-engine array of any numeric type, bfloat16 included
     * @return {@code array} itself when it already has this precision, else a new contiguous array
     *     in its manager and on its device (recorded by autograd when {@code array} requires
     *     gradients)
     */
    public NDArray cast(NDArray array) {
        if (ofArray(array) == this) {
            return array;
        }
        NDArray target = empty(array.getManager(), array.getShape(), array.getDevice());
        TensorMemory.copy(array, target);
        return target;
    }

    /** The shim's {@code int32_t} code of this type. */
    int shimType(AotiTorch torch) {
        int code = shimCode;
        if (code == UNKNOWN_CODE) {
            code = shimType.applyAsInt(torch);
            shimCode = code;
        }
        return code;
    }

    private NDArray empty(NDManager manager, Shape shape, Device device) {
        if (!(manager instanceof PtNDManager)) {
            throw new IllegalArgumentException(
                    "Precision needs a PyTorch-engine NDManager, got "
                            + manager.getClass().getName());
        }
        AotiTorch torch = AotiTorch.cpu();
        long[] sizes = shape.getShape();
        long tensor =
                DirectShim.emptyStrided(
                        sizes,
                        BlobTensors.contiguousStrides(sizes),
                        shimType(torch),
                        BlobTensors.deviceType(torch, device),
                        BlobTensors.deviceIndex(device));
        return new PtNDArray((PtNDManager) manager, tensor);
    }
}
