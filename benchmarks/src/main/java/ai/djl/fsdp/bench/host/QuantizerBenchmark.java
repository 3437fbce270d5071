package ai.djl.fsdp.bench.host;

import ai.djl.fsdp.tensor.quant.QuantizedBits;
import ai.djl.fsdp.tensor.quant.QuantizedRows;
import ai.djl.fsdp.tensor.quant.SymmetricQuantizer;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;

/**
 * What quantized communication costs a rank per shard (issue #48): quantizing and dequantizing a
 * 1M-element float32 shard ({@code 2^20} values) in blocks of 256, 8 and 4 bits, as a weight's
 * all-gather sends it and its receivers restore it.
 */
public class QuantizerBenchmark extends HostBenchmark {

    private static final int SHARD = 1 << 20;

    /** The codes' width. */
    @Param({"int8", "int4"})
    public String bits;

    private SymmetricQuantizer quantizer;
    private NDArray shard;
    private QuantizedRows quantized;

    /** Makes the shard and its quantized form. */
    @Setup(Level.Trial)
    public void setUp() {
        quantizer = SymmetricQuantizer.of(QuantizedBits.of(bits), 256);
        shard = manager.randomNormal(new Shape(SHARD));
        quantized = quantizer.quantize(shard, 1, manager);
    }

    /** Quantizes the shard: codes and one scale per block. */
    @Benchmark
    public void quantize() {
        try (NDManager scope = manager.newSubManager()) {
            quantizer.quantize(shard, 1, scope);
        }
    }

    /** Restores the shard's float32 values from its codes and scales. */
    @Benchmark
    public void dequantize() {
        try (NDManager scope = manager.newSubManager()) {
            quantizer.dequantize(quantized, SHARD, scope);
        }
    }
}
