package ai.djl.fsdp.tensor.quant;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;

/**
 * Two 4-bit codes a byte, the earlier in the high nibble ({@code 16 * first + second}), as both
 * this project's 4-bit communication and bitsandbytes' 4-bit weights lay them out. The codes and
 * the bytes' values travel as float32 arrays (exact: integers below 256), so the same libtorch
 * operators pack and unpack on any device.
 */
public final class Nibbles {

    private static final int NIBBLE = 16;

    private Nibbles() {}

    /**
     * Packs codes two a byte.
     *
     * @param codes an even number of codes from 0 to 15, float32, any shape
     * @return the bytes' values, float32, flat: half as many
     */
    public static NDArray pack(NDArray codes) {
        NDArray pairs = codes.reshape(-1, 2);
        return pairs.get(":, 0").mul(NIBBLE).add(pairs.get(":, 1"));
    }

    /**
     * Unpacks the codes of bytes, the inverse of {@link #pack}.
     *
     * @param bytes the bytes' values from 0 to 255, float32, any shape
     * @return the codes from 0 to 15, float32, flat: twice as many, each byte's high nibble first
     */
    public static NDArray unpack(NDArray bytes) {
        NDArray values = bytes.reshape(-1);
        NDArray high = values.div(NIBBLE).floor();
        NDArray low = values.sub(high.mul(NIBBLE));
        return NDArrays.stack(new NDList(high, low), 1).reshape(-1);
    }
}
