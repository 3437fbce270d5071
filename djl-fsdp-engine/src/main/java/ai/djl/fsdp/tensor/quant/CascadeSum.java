package ai.djl.fsdp.tensor.quant;

import java.util.Arrays;

/**
 * Sums rows of float32 values element by element in the order of libtorch's sum over the leading
 * axis of a CPU array (its cascade of four accumulators, {@code multi_row_sum} in ATen's {@code
 * SumKernel.cpp}): rows are added one by one into the first accumulator, and each time a run of
 * {@code 2^p} rows is complete ({@code p = max(4, ceil(log2 rows) / 4)}) it is carried into the
 * next level, which carries on into the one after at each {@code 2^p}-th run, and so on; at the end
 * the levels are added from the first up. Below 16 rows that is plain addition in row order
 * starting from zero. Summing a chunk of columns at a time then gives libtorch's sums bit for bit.
 */
final class CascadeSum {

    private static final int LEVELS = 4;

    private final int levelPower;
    private final int levelMask;
    private final float[][] levels;
    private int added;

    /**
     * Creates the sum of {@code rows} rows of up to {@code width} values.
     *
     * @param rows the rows to sum
     * @param width the most values a row has
     */
    CascadeSum(int rows, int width) {
        int ceilLog2 = rows <= 2 ? 1 : Integer.SIZE - Integer.numberOfLeadingZeros(rows - 1);
        levelPower = Math.max(4, ceilLog2 / LEVELS);
        levelMask = (1 << levelPower) - 1;
        levels = new float[LEVELS][width];
    }

    /**
     * Adds the next row's first {@code count} values.
     *
     * @param row the values
     * @param count how many, the same for every row of a sum
     */
    void add(float[] row, int count) {
        float[] first = levels[0];
        for (int i = 0; i < count; i++) {
            first[i] += row[i];
        }
        added++;
        if ((added & levelMask) != 0) {
            return;
        }
        for (int level = 1; level < LEVELS; level++) {
            float[] lower = levels[level - 1];
            float[] upper = levels[level];
            for (int i = 0; i < count; i++) {
                upper[i] += lower[i];
            }
            Arrays.fill(lower, 0, count, 0f);
            if ((added & (levelMask << (level * levelPower))) != 0) {
                break;
            }
        }
    }

    /**
     * Writes the sums of the rows added since the last call into the start of {@code sums} and
     * starts a new sum.
     *
     * @param count how many values each row had
     * @param sums where the sums go
     */
    void finish(int count, float[] sums) {
        float[] first = levels[0];
        for (int level = 1; level < LEVELS; level++) {
            float[] upper = levels[level];
            for (int i = 0; i < count; i++) {
                first[i] += upper[i];
            }
            Arrays.fill(upper, 0, count, 0f);
        }
        System.arraycopy(first, 0, sums, 0, count);
        Arrays.fill(first, 0, count, 0f);
        added = 0;
    }
}
