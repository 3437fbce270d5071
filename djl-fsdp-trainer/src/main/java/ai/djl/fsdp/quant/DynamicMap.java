package ai.djl.fsdp.quant;

import java.util.Arrays;

/**
 * bitsandbytes' signed 8-bit dynamic map, which its double quantization codes the block scales
 * with: 256 sorted values in [-1, 1], a decimal exponent from 1e-6 to 1 and, per exponent, twice as
 * many linearly spaced fractions as the one before, with an exact zero and one.
 *
 * <p>bitsandbytes builds the map with {@code torch.linspace} on the host, whose float32 results
 * depend in their last bits on the kernel set libtorch picks: this map is the one libtorch's
 * portable kernels give ({@code ATEN_CPU_CAPABILITY=default}). A checkpoint stores its map ({@code
 * nested_quant_map}), and a stored map is used as it is.
 */
public final class DynamicMap {

    /** The number of values, one per 8-bit code. */
    public static final int SIZE = 256;

    private static final int EXPONENTS = 7;
    private static final int LANES = 8;
    private static final float[] SIGNED = build();

    private DynamicMap() {}

    /**
     * Returns the signed dynamic map ({@code create_dynamic_map(signed=True)}).
     *
     * @return a copy of the 256 sorted values
     */
    public static float[] signed() {
        return SIGNED.clone();
    }

    /**
     * Codes {@code x} (already divided by its block's largest magnitude) as bitsandbytes' kernel
     * does: seven halvings of a search over the sorted map from its middle, then the nearer of the
     * value reached and the last value passed on the side {@code x} lies, by their midpoint (a tie
     * keeps the value reached). NaN codes as 0.
     *
     * @param map a sorted map of 256 values
     * @param x the scaled value
     * @return the code, 0..255
     */
    public static int encode(float[] map, float x) {
        int pivot = 127;
        int below = 0;
        int above = SIZE - 1;
        float belowValue = -1f;
        float aboveValue = 1f;
        for (int step = 64; step > 0; step >>= 1) {
            if (x > map[pivot]) {
                below = pivot;
                belowValue = map[pivot];
                pivot += step;
            } else {
                above = pivot;
                aboveValue = map[pivot];
                pivot -= step;
            }
        }
        float reached = map[pivot];
        if (x > reached) {
            float upper = above == SIZE - 1 ? map[SIZE - 1] : aboveValue;
            return x > (upper + reached) * 0.5f ? above : pivot;
        }
        float lower = below == 0 ? map[0] : belowValue;
        return x < (lower + reached) * 0.5f ? below : pivot;
    }

    private static float[] build() {
        float[] values = new float[SIZE];
        int count = 0;
        for (int i = 0; i < EXPONENTS; i++) {
            float[] bounds = linspace(0.1f, 1f, (1 << i) + 1);
            float scale = (float) Double.parseDouble("1e" + (i - (EXPONENTS - 1)));
            for (int j = 0; j + 1 < bounds.length; j++) {
                float mean = (bounds[j] + bounds[j + 1]) / 2f;
                values[count++] = scale * mean;
                values[count++] = -(scale * mean);
            }
        }
        values[count++] = 0f;
        values[count] = 1f;
        Arrays.sort(values);
        return values;
    }

    /**
     * {@code torch.linspace(start, end, steps)} in float32 as libtorch's portable CPU kernel
     * computes it: the first half counted up from {@code start}, the second down from {@code end},
     * except that runs of two 8-lane vectors count each lane up from the vector's first value.
     */
    private static float[] linspace(float start, float end, int steps) {
        float step = (end - start) / (steps - 1);
        int halfway = steps / 2;
        float[] out = new float[steps];
        int index = 0;
        for (; index <= steps - 2 * LANES; index += 2 * LANES) {
            for (int vector = index; vector < index + 2 * LANES; vector += LANES) {
                float first = linspaceAt(start, end, step, steps, halfway, vector);
                for (int lane = 0; lane < LANES; lane++) {
                    out[vector + lane] = first + lane * step;
                }
            }
        }
        for (; index < steps; index++) {
            out[index] = linspaceAt(start, end, step, steps, halfway, index);
        }
        return out;
    }

    private static float linspaceAt(
            float start, float end, float step, int steps, int halfway, int index) {
        return index < halfway ? start + step * index : end - step * (steps - index - 1);
    }
}
