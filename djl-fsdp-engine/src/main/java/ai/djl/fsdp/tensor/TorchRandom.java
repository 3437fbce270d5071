package ai.djl.fsdp.tensor;

import ai.djl.pytorch.jni.JniUtils;

/**
 * Seeds libtorch's random generator alone.
 *
 * <p>Why not {@code Engine.setRandomSeed}: it also reseeds DJL's {@code RandomUtils.RANDOM}, which
 * DJL's {@code RandomSampler} shuffles each epoch with. FSDP reseeds before every unit's call (so
 * recompute replays dropout), with seeds that differ per rank: through the engine, that would make
 * each rank shuffle the global batches differently from the second epoch on.
 */
public final class TorchRandom {

    private TorchRandom() {}

    /**
     * Seeds the generator dropout and other tensor randomness draw from.
     *
     * @param seed the seed
     */
    public static void seed(long seed) {
        JniUtils.setSeed(seed);
    }
}
