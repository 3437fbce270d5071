package ai.djl.fsdp.trainer.metrics;

/**
 * The bytes a rank sent, by the kind of collective. In a training step the all-gathers are the
 * units' weight gathers (in codes and scales when weights are quantized), the reduce-scatters and
 * all-to-alls their gradient reductions (all-to-alls when gradients are quantized), the all-reduces
 * the replicate groups' gradient averages of hybrid sharding, unsplit buffers' gradients and the
 * gradient norm's scalar; a quantized average across replicate groups is an all-to-all and an
 * all-gather of codes and counts as those. Broadcasts are the rest.
 *
 * @param allGather the bytes sent by all-gathers
 * @param reduceScatter the bytes sent by reduce-scatters and all-to-alls
 * @param allReduce the bytes sent by all-reduces
 * @param other the bytes sent by broadcasts
 */
public record SentBytes(long allGather, long reduceScatter, long allReduce, long other) {

    /** No bytes. */
    public static final SentBytes NONE = new SentBytes(0, 0, 0, 0);

    /** Returns the bytes of every kind together. */
    public long total() {
        return allGather + reduceScatter + allReduce + other;
    }
}
