package ai.djl.fsdp.trainer.metrics;

import java.util.List;
import java.util.Locale;

/**
 * The bytes a rank sent, by the kind of collective. In a training step the all-gathers are the
 * units' weight gathers (in codes and scales when weights are quantized), the reduce-scatters and
 * all-to-alls their gradient reductions (all-to-alls when gradients are quantized), the all-reduces
 * the replicate groups' gradient averages of hybrid sharding, unsplit buffers' gradients and the
 * gradient norm's scalar; a quantized average across replicate groups is an all-to-all and an
 * all-gather of codes and counts as those. Broadcasts are the rest. Programs print them under the
 * names of {@link #KINDS} ({@link #format}).
 *
 * @param allGather the bytes sent by all-gathers
 * @param reduceScatter the bytes sent by reduce-scatters and all-to-alls
 * @param allReduce the bytes sent by all-reduces
 * @param other the bytes sent by broadcasts
 */
public record SentBytes(long allGather, long reduceScatter, long allReduce, long other) {

    /** No bytes. */
    public static final SentBytes NONE = new SentBytes(0, 0, 0, 0);

    /** The kinds' names, in the order of the record's components. */
    public static final List<String> KINDS =
            List.of("all_gather", "reduce_scatter", "all_reduce", "other");

    /**
     * Returns the bytes of each kind, in the order of {@link #KINDS}.
     *
     * @return the four counts
     */
    public long[] toArray() {
        return new long[] {allGather, reduceScatter, allReduce, other};
    }

    /**
     * Returns the bytes of each kind in the order of {@link #KINDS}.
     *
     * @param bytes the four counts
     * @return the bytes by kind
     * @throws IllegalArgumentException if there are not four counts
     */
    public static SentBytes of(long... bytes) {
        if (bytes.length != KINDS.size()) {
            throw new IllegalArgumentException(
                    "Bytes sent by kind take " + KINDS.size() + " counts, not " + bytes.length);
        }
        return new SentBytes(bytes[0], bytes[1], bytes[2], bytes[3]);
    }

    /**
     * Returns the larger count of each kind of this and {@code that}: what the busiest rank sends.
     *
     * @param that other bytes by kind
     * @return the kinds' maxima
     */
    public SentBytes max(SentBytes that) {
        return new SentBytes(
                Math.max(allGather, that.allGather),
                Math.max(reduceScatter, that.reduceScatter),
                Math.max(allReduce, that.allReduce),
                Math.max(other, that.other));
    }

    /**
     * Writes each kind as {@code sent_<kind>_mb<suffix>=<megabytes>} (10^6 bytes, three decimals),
     * separated by spaces: how {@code bench train} and {@code finetune} print them.
     *
     * @param suffix what follows {@code _mb} in each name ({@code ""}, {@code "_per_step"})
     * @return the text
     */
    public String format(String suffix) {
        long[] bytes = toArray();
        StringBuilder text = new StringBuilder();
        for (int kind = 0; kind < bytes.length; kind++) {
            text.append(kind == 0 ? "" : " ")
                    .append(
                            String.format(
                                    Locale.ROOT,
                                    "sent_%s_mb%s=%.3f",
                                    KINDS.get(kind),
                                    suffix,
                                    bytes[kind] / 1e6));
        }
        return text.toString();
    }

    /** Returns the bytes of every kind together. */
    public long total() {
        return allGather + reduceScatter + allReduce + other;
    }
}
