package ai.djl.fsdp.tensor.quant;

import ai.djl.fsdp.tensor.BlobTensors;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

/**
 * The quantizer's codes made and restored by libtorch's operators, on the values' device (a GPU's
 * arrays, and host arrays {@link HostCodec} does not reach): each step a pass over all the values,
 * its result an array their size, freed when the call returns.
 */
final class OperatorCodec {

    private static final int INT4_OFFSET = 8;

    private final QuantizedBits bits;
    private final int blockSize;

    OperatorCodec(QuantizedBits bits, int blockSize) {
        this.bits = bits;
        this.blockSize = blockSize;
    }

    /**
     * Quantizes {@code values} as {@code rows} rows of {@code padded} values after padding, plus
     * {@code residual} if given, which then takes what quantizing took off that sum.
     */
    QuantizedRows quantize(
            NDArray values, long rows, long padded, NDArray residual, NDManager manager) {
        long columns = values.size() / rows;
        try (NDManager scope = manager.newSubManager(values.getDevice())) {
            values.tempAttach(scope);
            NDArray corrected = Precision.cast(values, DataType.FLOAT32).reshape(-1);
            if (residual != null) {
                corrected = corrected.add(residual);
            }
            NDArray floats = corrected.reshape(rows, columns);
            if (padded != columns) {
                floats = floats.concat(scope.zeros(new Shape(rows, padded - columns)), 1);
            }
            NDArray blocks = floats.reshape(-1, blockSize);
            NDArray absmax = blocks.abs().max(new int[] {1}, true);
            // libtorch's max keeps NaN, so a block's absmax is finite only if all of it is; x * 0
            // is 0 for a finite x and NaN for NaN or an infinity: such a block's scale is NaN.
            NDArray scales = absmax.add(absmax.mul(0));
            // A block of zeros keeps scale 0 and is divided by 1, so its codes are zeros.
            NDArray divisor = absmax.add(absmax.eq(0).toType(DataType.FLOAT32, false));
            NDArray ratios = blocks.div(divisor);
            // In a block that is not finite each ratio is 0 (a finite value over an infinity) or
            // NaN: its codes are zeros, and its NaN scale makes every value of it NaN.
            ratios = NDArrays.where(ratios.isNaN(), ratios.zerosLike(), ratios);
            NDArray levels =
                    ratios.mul(bits.getMaxCode())
                            .round()
                            .clip(-bits.getMaxCode(), bits.getMaxCode());
            NDArray codes =
                    bits == QuantizedBits.INT8 ? levels : Nibbles.pack(levels.add(INT4_OFFSET));
            QuantizedRows quantized =
                    new QuantizedRows(
                            codes.reshape(-1).toType(bits.getCodeType(), false),
                            scales.reshape(-1));
            if (residual != null) {
                NDArray sent = restored(quantized, padded, columns).reshape(-1);
                BlobTensors.writeThrough(corrected.sub(sent), residual, scope);
            }
            quantized.codes().attach(manager);
            quantized.scales().attach(manager);
            return quantized;
        }
    }

    /** Returns the rows' float32 values, 2-D (a view of the padded rows when padded). */
    NDArray dequantize(QuantizedRows quantized, long padded, long columns, NDManager manager) {
        NDArray codes = quantized.codes();
        NDArray scales = quantized.scales();
        try (NDManager scope = manager.newSubManager(codes.getDevice())) {
            codes.tempAttach(scope);
            scales.tempAttach(scope);
            NDArray values = restored(quantized, padded, columns);
            values.attach(manager);
            return values;
        }
    }

    /**
     * Writes the rows one after another into {@code target}, or with {@code sum} their sum divided
     * by {@code divisor}.
     */
    void restore(
            QuantizedRows quantized,
            long padded,
            long columns,
            boolean sum,
            int divisor,
            NDArray target) {
        try (NDManager scope = target.getManager().newSubManager(target.getDevice())) {
            NDArray values = dequantize(quantized, padded, columns, scope);
            if (sum) {
                values = values.sum(new int[] {0});
                if (divisor != 1) {
                    values = values.div(divisor);
                }
            }
            BlobTensors.writeThrough(values, target, scope);
        }
    }

    /** The rows' values, in the current scope of the codes. */
    private NDArray restored(QuantizedRows quantized, long padded, long columns) {
        NDArray levels = quantized.codes().toType(DataType.FLOAT32, false);
        if (bits == QuantizedBits.INT4) {
            levels = Nibbles.unpack(levels).sub(INT4_OFFSET);
        }
        NDArray values =
                levels.reshape(-1, blockSize)
                        .div(bits.getMaxCode())
                        .mul(quantized.scales().reshape(-1, 1))
                        .reshape(-1, padded);
        return padded != columns ? values.get(":, 0:" + columns) : values;
    }
}
