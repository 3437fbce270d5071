package ai.djl.fsdp.internal.param;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import java.util.ArrayList;
import java.util.List;

/**
 * Where each parameter of a flat buffer lies: the parameters laid end to end, padded to a multiple
 * of the shard count, the contiguous range of elements each shard holds, and each parameter's view
 * into a buffer so laid out. No I/O.
 */
public final class FlatLayout {

    private final List<Shape> shapes;
    private final long[] offsets;
    private final long numel;
    private final long paddedNumel;
    private final int shardCount;

    /**
     * Lays out parameters of the given shapes over {@code shardCount} shards.
     *
     * @param shapes the parameters' shapes, in buffer order
     * @param shardCount how many pieces the buffer is split in (1 for no sharding)
     */
    public FlatLayout(List<Shape> shapes, int shardCount) {
        if (shapes.isEmpty() || shardCount < 1) {
            throw new IllegalArgumentException(
                    "A flat layout needs parameters and at least one shard");
        }
        this.shapes = List.copyOf(shapes);
        this.shardCount = shardCount;
        offsets = new long[shapes.size()];
        long total = 0;
        for (int i = 0; i < shapes.size(); i++) {
            offsets[i] = total;
            total += shapes.get(i).size();
        }
        numel = total;
        paddedNumel = (total + shardCount - 1) / shardCount * shardCount;
    }

    /** Returns the number of parameters. */
    public int getParameterCount() {
        return shapes.size();
    }

    /**
     * Returns a parameter's shape.
     *
     * @param parameter the parameter's position in the buffer
     * @return its shape
     */
    public Shape getShape(int parameter) {
        return shapes.get(parameter);
    }

    /**
     * Returns where a parameter starts in the buffer.
     *
     * @param parameter the parameter's position in the buffer
     * @return its first element's offset
     */
    public long getOffset(int parameter) {
        return offsets[parameter];
    }

    /** Returns the number of elements of the parameters, without padding. */
    public long getNumel() {
        return numel;
    }

    /** Returns the number of elements of the padded buffer. */
    public long getPaddedNumel() {
        return paddedNumel;
    }

    /** Returns how many shards the buffer is split in. */
    public int getShardCount() {
        return shardCount;
    }

    /** Returns the number of elements of one shard. */
    public long getShardNumel() {
        return paddedNumel / shardCount;
    }

    /**
     * Returns the first element of a shard in the buffer.
     *
     * @param shard the shard's index
     * @return its offset
     */
    public long getShardStart(int shard) {
        return shard * getShardNumel();
    }

    /**
     * Returns the part of a parameter that lies in a shard, as element ranges of the parameter's
     * row-major flattening and of the shard, or null when they do not overlap.
     *
     * @param parameter the parameter's position in the buffer
     * @param shard the shard's index
     * @return the overlap, or null
     */
    public Overlap overlap(int parameter, int shard) {
        long start = getShardStart(shard);
        long from = Math.max(start, offsets[parameter]);
        long to =
                Math.min(
                        start + getShardNumel(), offsets[parameter] + shapes.get(parameter).size());
        if (from >= to) {
            return null;
        }
        return new Overlap(from - offsets[parameter], to - offsets[parameter], from - start);
    }

    /**
     * Returns each parameter's view into {@code base}, a full buffer or a leaf sharing its storage.
     *
     * @param base a 1-D array of the padded full size
     * @return the views, in parameter order
     */
    public List<NDArray> viewsOf(NDArray base) {
        // One split into every parameter's range (and the padding's), then each range's shape:
        // one libtorch call and one more per parameter of two or more dimensions, not a slice and
        // a reshape each.
        int count = shapes.size();
        boolean padded = paddedNumel > numel;
        if (count == 1 && !padded) {
            // DJL's split at no boundary hands back the base itself, not a view.
            return List.of(base.reshape(shapes.get(0)));
        }
        long[] boundaries = new long[count - 1 + (padded ? 1 : 0)];
        for (int i = 1; i < count; i++) {
            boundaries[i - 1] = offsets[i];
        }
        if (padded) {
            boundaries[count - 1] = numel;
        }
        NDList ranges = base.split(boundaries, 0);
        List<NDArray> views = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            NDArray range = ranges.get(i);
            // A one-dimensional parameter (a bias, a norm's weight) is its range as it comes.
            Shape shape = shapes.get(i);
            NDArray view = shape.dimension() == 1 ? range : range.reshape(shape);
            views.add(view);
            if (view != range) {
                range.close();
            }
        }
        if (padded) {
            ranges.get(count).close();
        }
        return views;
    }

    /**
     * A parameter's elements {@code [from, to)} that lie in a shard, from {@code shardOffset} on.
     *
     * @param from the first element, in the parameter
     * @param to one past the last element, in the parameter
     * @param shardOffset where element {@code from} lies in the shard
     */
    public record Overlap(long from, long to, long shardOffset) {

        /** Returns the number of elements. */
        public long size() {
            return to - from;
        }
    }
}
