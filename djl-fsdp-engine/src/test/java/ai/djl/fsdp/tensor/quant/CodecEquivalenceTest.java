package ai.djl.fsdp.tensor.quant;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The host codec against the operator codec, the definition it replaces on the CPU: the same codes
 * byte for byte, the same scales, residuals and restored values bit for bit (a NaN only as NaN: its
 * payload is not defined), for rows of odd lengths cut into several chunks, blocks of zeros, of one
 * outlier, of denormals, of float32's largest values, of values halfway between two levels, of NaN
 * and infinities, from float32 and bfloat16 values, summed over 1 to 33 rows (libtorch's cascade of
 * sums starts at 16 rows). The module's build runs it under the machine's kernels and {@code
 * ATEN_CPU_CAPABILITY=default} and {@code avx2}.
 */
class CodecEquivalenceTest {

    private NDManager manager;

    @BeforeEach
    void openManager() {
        manager = NDManager.newBaseManager(Device.cpu(), "PyTorch");
    }

    @AfterEach
    void closeManager() {
        manager.close();
    }

    static Stream<Arguments> shapes() {
        return Stream.of(
                Arguments.of(QuantizedBits.INT8, 64, 3, 40_037L),
                Arguments.of(QuantizedBits.INT4, 64, 3, 40_037L),
                Arguments.of(QuantizedBits.INT8, 256, 2, 70_000L),
                Arguments.of(QuantizedBits.INT4, 2048, 2, 600_001L),
                Arguments.of(QuantizedBits.INT4, 128, 5, 130L));
    }

    @ParameterizedTest
    @MethodSource("shapes")
    void quantizingWritesTheOperatorsCodesAndScales(
            QuantizedBits bits, int block, int rows, long columns) {
        for (Precision type : new Precision[] {Precision.FLOAT32, Precision.BFLOAT16}) {
            NDArray values = type.cast(manager.create(edgeValues(rows * columns, block, 3)));
            for (boolean feedback : new boolean[] {false, true}) {
                NDArray hostResidual = feedback ? residual(rows * columns, 5) : null;
                NDArray operatorResidual = feedback ? hostResidual.duplicate() : null;
                String what = bits + " " + type + (feedback ? " with error feedback" : "");
                try (NDManager scope = manager.newSubManager()) {
                    SymmetricQuantizer quantizer = SymmetricQuantizer.of(bits, block);
                    QuantizedRows expected =
                            new OperatorCodec(bits, block)
                                    .quantize(
                                            values,
                                            rows,
                                            quantizer.blocksPerRow(columns) * block,
                                            operatorResidual,
                                            scope);
                    QuantizedRows actual = quantizer.allocate(scope, rows, columns);
                    new HostCodec(bits, block)
                            .quantize(values, rows, columns, hostResidual, actual);
                    assertArrayEquals(
                            expected.codes().toByteArray(), actual.codes().toByteArray(), what);
                    assertSameFloats(expected.scales(), actual.scales(), what + ": scales");
                    if (feedback) {
                        assertSameFloats(operatorResidual, hostResidual, what + ": residual");
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @MethodSource("shapes")
    void restoringWritesTheOperatorsValues(QuantizedBits bits, int block, int rows, long columns) {
        for (Precision type : new Precision[] {Precision.FLOAT32, Precision.BFLOAT16}) {
            try (NDManager scope = manager.newSubManager()) {
                QuantizedRows quantized = quantized(bits, block, rows, columns, scope);
                NDArray expected = type.zeros(scope, new Shape(rows * columns));
                NDArray actual = type.zeros(scope, new Shape(rows * columns));
                long padded = SymmetricQuantizer.of(bits, block).blocksPerRow(columns) * block;
                new OperatorCodec(bits, block)
                        .restore(quantized, padded, columns, false, 1, expected);
                new HostCodec(bits, block).restore(quantized, rows, columns, false, 1, actual);
                assertSameFloats(expected, actual, bits + " into " + type);
            }
        }
    }

    @ParameterizedTest
    @MethodSource("shapes")
    void summingRowsWritesTheOperatorsSums(QuantizedBits bits, int block, int ignored, long width) {
        long columns = Math.min(width, 20_000);
        for (int rows : new int[] {1, 2, 3, 5, 16, 17, 18, 33}) {
            for (Precision type : new Precision[] {Precision.FLOAT32, Precision.BFLOAT16}) {
                for (int divisor : new int[] {1, rows}) {
                    try (NDManager scope = manager.newSubManager()) {
                        QuantizedRows quantized = quantized(bits, block, rows, columns, scope);
                        NDArray expected = type.zeros(scope, new Shape(columns));
                        NDArray actual = type.zeros(scope, new Shape(columns));
                        long padded =
                                SymmetricQuantizer.of(bits, block).blocksPerRow(columns) * block;
                        new OperatorCodec(bits, block)
                                .restore(quantized, padded, columns, true, divisor, expected);
                        new HostCodec(bits, block)
                                .restore(quantized, rows, columns, true, divisor, actual);
                        assertSameFloats(
                                expected,
                                actual,
                                bits + " " + rows + " rows / " + divisor + " into " + type);
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(QuantizedBits.class)
    void theHostCodecReachesContiguousCpuArraysOfFloat32AndBfloat16(QuantizedBits bits) {
        QuantizedRows room = SymmetricQuantizer.of(bits, 64).allocate(manager, 2, 100);
        NDArray floats = manager.zeros(new Shape(2, 100));
        assertTrue(HostCodec.applies(room));
        assertTrue(HostCodec.applies(room, floats, Precision.BFLOAT16.cast(floats)));
        assertFalse(HostCodec.applies(room, Precision.FLOAT16.cast(floats)));
        assertFalse(HostCodec.applies(room, floats.transpose()));
        assertFalse(HostCodec.applies(new QuantizedRows(room.codes(), floats.transpose())));
    }

    /** Rows quantized by the operators from values with edge blocks. */
    private QuantizedRows quantized(
            QuantizedBits bits, int block, int rows, long columns, NDManager scope) {
        NDArray values = scope.create(edgeValues(rows * columns, block, rows));
        long padded = SymmetricQuantizer.of(bits, block).blocksPerRow(columns) * block;
        return new OperatorCodec(bits, block).quantize(values, rows, padded, null, scope);
    }

    /**
     * Gaussian values of varied magnitude, with every few blocks an edge block: zeros, one outlier,
     * denormals, float32's largest magnitudes, levels and half levels of the block's absmax,
     * negative zeros, a NaN, an infinity.
     */
    private static float[] edgeValues(long count, int block, long seed) {
        Random random = new Random(seed);
        float[] values = new float[(int) count];
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) (random.nextGaussian() * Math.exp(3 * random.nextGaussian()));
        }
        for (int start = 0, kind = 0; start < values.length; start += 3 * block, kind++) {
            int end = Math.min(values.length, start + block);
            for (int i = start; i < end; i++) {
                int k = i - start;
                switch (kind % 9) {
                    case 0 -> values[i] = 0f;
                    case 1 -> values[i] = k == 5 ? 3e7f : 1e-3f * (k - 20);
                    case 2 -> values[i] = Float.MIN_VALUE * (k - 20) * 3;
                    case 3 -> values[i] = (k % 2 == 0 ? 1 : -1) * Float.MAX_VALUE / (1 + k);
                    case 4 -> values[i] = k == 0 ? 254f : k - 127.5f + (k % 3);
                    case 5 -> values[i] = k == 0 ? 14f : (k % 15) - 7.5f;
                    case 6 -> values[i] = -0f;
                    case 7 -> values[i] = k == 7 ? Float.NaN : values[i];
                    default -> values[i] = k == 3 ? Float.NEGATIVE_INFINITY : values[i];
                }
            }
        }
        return values;
    }

    private NDArray residual(long count, long seed) {
        Random random = new Random(seed);
        float[] values = new float[(int) count];
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) (random.nextGaussian() * 1e-2);
        }
        return manager.create(values);
    }

    /** The same bits at every position, or NaN at both. */
    private static void assertSameFloats(NDArray expected, NDArray actual, String what) {
        float[] want = Precision.cast(expected, DataType.FLOAT32).toFloatArray();
        float[] got = Precision.cast(actual, DataType.FLOAT32).toFloatArray();
        assertEquals(want.length, got.length, what);
        for (int i = 0; i < want.length; i++) {
            if (Float.isNaN(want[i])) {
                assertTrue(Float.isNaN(got[i]), what + ": value " + i + " is " + got[i]);
            } else {
                assertEquals(
                        Float.floatToRawIntBits(want[i]),
                        Float.floatToRawIntBits(got[i]),
                        what + ": value " + i + " is " + got[i] + ", not " + want[i]);
            }
        }
    }
}
