package ai.djl.fsdp.dist.quant;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.fsdp.tensor.quant.QuantizedBits;
import ai.djl.fsdp.tensor.quant.SymmetricQuantizer;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * A rank of {@link QuantizedCollectivesTest}'s jobs: gathers and reduce-scatters values of
 * different magnitudes per rank and per block, quantized, and checks each result element against
 * the exact collective's within the bound the blocks' magnitudes give: an all-gather's value within
 * {@link SymmetricQuantizer#errorBound} of its block's largest magnitude (half a step, {@code
 * absmax / 254}, and float32's rounding), plus bfloat16's rounding of the result ({@code 2^-8} of
 * it) when gathered into bfloat16; a mean within the ranks' bounds summed and divided by the ranks,
 * plus float32's rounding of the sum and the division ({@code 2^-23} of the restored values'
 * magnitudes summed); an all-reduce's mean within that bound of its piece's reduce-scatter plus the
 * bound of its reduced block, whose largest magnitude is at most the exact means' plus the first
 * bound. Then again with one NaN in rank 0's values, in the last rank's piece of the
 * reduce-scatter: every rank completes the collectives, the block that held the NaN comes back NaN
 * wherever it lands, and every other value keeps its bound. Prints {@code OK} and exits 0 when all
 * hold, else prints the failures and exits 1.
 */
public final class QuantizedCollectivesMain {

    /** Values per rank's piece: three blocks of 256 and a partial one. */
    private static final int PIECE = 1000;

    private static final int BLOCK = 256;

    private final ProcessGroup group;
    private final NDManager manager;
    private final int rank;
    private final int size;
    private final List<String> failures = new ArrayList<>();
    private boolean poisoned;

    private QuantizedCollectivesMain(ProcessGroup group, NDManager manager) {
        this.group = group;
        this.manager = manager;
        rank = group.getRank();
        size = group.getSize();
    }

    public static void main(String[] args) {
        ProcessGroupOptions options =
                ProcessGroupOptions.builder().optTimeout(Duration.ofSeconds(60)).build();
        QuantizedCollectivesMain check;
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment(), options);
                NDManager manager = NDManager.newBaseManager(group.getDevice())) {
            check = new QuantizedCollectivesMain(group, manager);
            check.checkAllGather(Precision.FLOAT32);
            check.checkAllGather(Precision.BFLOAT16);
            check.checkReduceScatter(QuantizedBits.INT8);
            check.checkReduceScatter(QuantizedBits.INT4);
            check.checkAllReduce(QuantizedBits.INT8);
            check.checkAllReduce(QuantizedBits.INT4);
            check.checkErrorFeedback(QuantizedBits.INT4);
            check.poisoned = true;
            check.checkAllGather(Precision.FLOAT32);
            check.checkReduceScatter(QuantizedBits.INT8);
            check.checkReduceScatter(QuantizedBits.INT4);
            group.barrier();
        }
        if (!check.failures.isEmpty()) {
            check.failures.forEach(System.out::println);
            System.exit(1);
        }
        System.out.println("OK");
        System.exit(0);
    }

    /**
     * Rank {@code r}'s values: Gaussians scaled per block of 256 by 10^(block mod 4 - 2); once
     * poisoned, rank 0's value 300 of the last piece is NaN (its second block's).
     */
    private float[] values(int r, int count) {
        Random random = new Random(31L * r + count);
        float[] values = new float[count];
        for (int i = 0; i < count; i++) {
            values[i] = (float) (random.nextGaussian() * Math.pow(10, (i / BLOCK + r) % 4 - 2));
        }
        if (poisoned && r == 0) {
            values[count - PIECE + 300] = Float.NaN;
        }
        return values;
    }

    /**
     * The largest magnitude of the block holding element {@code i} of a row of {@code row}: NaN if
     * the block holds NaN, whose values then come back NaN.
     */
    private static float absmax(float[] row, int start, int length, int i) {
        int from = start + (i - start) / BLOCK * BLOCK;
        int to = Math.min(start + length, from + BLOCK);
        float max = 0;
        for (int j = from; j < to; j++) {
            max = Math.max(max, Math.abs(row[j]));
        }
        return max;
    }

    private void checkAllGather(Precision type) {
        SymmetricQuantizer quantizer = SymmetricQuantizer.of(QuantizedBits.INT8, BLOCK);
        QuantizedCollectives collectives = new QuantizedCollectives(quantizer);
        NDArray input = type.cast(manager.create(values(rank, PIECE)));
        NDArray output = type.empty(manager, new Shape((long) PIECE * size));
        collectives.allGatherAsync(group, input, output).await();
        float[] got = floats(output);
        for (int r = 0; r < size; r++) {
            // What rank r sent, as this rank computes it: in the gather's type first.
            float[] sent = floats(type.cast(manager.create(values(r, PIECE))));
            for (int i = 0; i < PIECE; i++) {
                double bound = quantizer.errorBound(absmax(sent, 0, PIECE, i));
                if (type != Precision.FLOAT32) {
                    bound += (Math.abs(sent[i]) + bound) * 0x1p-8;
                }
                check(
                        "allGather into " + type.getName(),
                        r * PIECE + i,
                        got[r * PIECE + i],
                        sent[i],
                        bound);
            }
        }
    }

    private void checkReduceScatter(QuantizedBits bits) {
        SymmetricQuantizer quantizer = SymmetricQuantizer.of(bits, BLOCK);
        QuantizedCollectives collectives = new QuantizedCollectives(quantizer);
        NDArray input = manager.create(values(rank, PIECE * size));
        NDArray output = manager.zeros(new Shape(PIECE));
        collectives.reduceScatterAsync(group, input, output, ReduceOp.AVG).await();
        float[] got = output.toFloatArray();
        for (int i = 0; i < PIECE; i++) {
            Mean mean = mean(quantizer, i, 1);
            check(
                    "reduceScatter " + bits.getName(),
                    i,
                    got[i],
                    mean.exact(),
                    mean.bound() + 0x1p-23 * mean.magnitudes());
        }
    }

    private void checkAllReduce(QuantizedBits bits) {
        SymmetricQuantizer quantizer = SymmetricQuantizer.of(bits, BLOCK);
        NDArray array = manager.create(values(rank, PIECE));
        new QuantizedCollectives(quantizer)
                .allReduceAsync(group, array, ReduceOp.AVG, null)
                .await();
        float[] got = array.toFloatArray();
        // Each rank's values are cut into pieces of the padded length, each piece into blocks.
        int piece = (PIECE + size - 1) / size;
        double[] exact = new double[PIECE];
        double[] first = new double[PIECE];
        for (int r = 0; r < size; r++) {
            float[] row = values(r, PIECE);
            for (int i = 0; i < PIECE; i++) {
                int start = i / piece * piece;
                int length = Math.min(piece, PIECE - start);
                double error = quantizer.errorBound(absmax(row, start, length, i));
                exact[i] += row[i] / (double) size;
                first[i] += error / size + 0x1p-23 * (Math.abs(row[i]) + error);
            }
        }
        for (int i = 0; i < PIECE; i++) {
            int start = i / piece * piece;
            int from = start + (i - start) / BLOCK * BLOCK;
            int to = Math.min(Math.min(PIECE, start + piece), from + BLOCK);
            double reduced = 0;
            for (int j = from; j < to; j++) {
                reduced = Math.max(reduced, Math.abs(exact[j]) + first[j]);
            }
            check(
                    "allReduce " + bits.getName(),
                    i,
                    got[i],
                    exact[i],
                    first[i] + quantizer.errorBound(reduced));
        }
    }

    private void checkErrorFeedback(QuantizedBits bits) {
        int steps = 4;
        SymmetricQuantizer quantizer = SymmetricQuantizer.of(bits, BLOCK);
        QuantizedCollectives collectives = new QuantizedCollectives(quantizer);
        NDArray input = manager.create(values(rank, PIECE * size));
        NDArray residual = manager.zeros(new Shape((long) PIECE * size));
        double[] sums = new double[PIECE];
        for (int step = 0; step < steps; step++) {
            NDArray output = manager.zeros(new Shape(PIECE));
            collectives.reduceScatterAsync(group, input, output, ReduceOp.AVG, residual).await();
            float[] got = output.toFloatArray();
            for (int i = 0; i < PIECE; i++) {
                sums[i] += got[i];
            }
        }
        double grown = 1 + 1.0 / bits.getMaxCode();
        for (int i = 0; i < PIECE; i++) {
            Mean mean = mean(quantizer, i, grown);
            check(
                    "reduceScatter with error feedback " + bits.getName(),
                    i,
                    sums[i],
                    steps * mean.exact(),
                    mean.bound() + steps * 0x1p-23 * mean.magnitudes());
        }
    }

    /**
     * The exact mean of element {@code i} of this rank's piece over the ranks, the ranks' bounds
     * summed and divided by the ranks, and the values' and bounds' magnitudes summed.
     */
    private record Mean(double exact, double bound, double magnitudes) {}

    /**
     * The mean of element {@code i} of this rank's piece, each block's absmax times {@code grown}.
     */
    private Mean mean(SymmetricQuantizer quantizer, int i, double grown) {
        double exact = 0;
        double bound = 0;
        double magnitudes = 0;
        for (int r = 0; r < size; r++) {
            float[] row = values(r, PIECE * size);
            float value = row[rank * PIECE + i];
            double error =
                    quantizer.errorBound(
                            grown * absmax(row, rank * PIECE, PIECE, rank * PIECE + i));
            exact += value;
            bound += error;
            magnitudes += Math.abs(value) + error;
        }
        return new Mean(exact / size, bound / size, magnitudes);
    }

    private void check(String what, int at, double got, double exact, double bound) {
        boolean held = Double.isNaN(bound) ? Double.isNaN(got) : Math.abs(got - exact) <= bound;
        if (!held) {
            failures.add(
                    what
                            + ": element "
                            + at
                            + " is "
                            + got
                            + ", exact "
                            + exact
                            + ", bound "
                            + bound);
        }
    }

    /** Reads any float array's values, bfloat16 included, through a float32 copy. */
    private float[] floats(NDArray array) {
        NDArray wide = manager.zeros(array.getShape(), DataType.FLOAT32);
        TensorMemory.copy(array, wide);
        return wide.toFloatArray();
    }
}
