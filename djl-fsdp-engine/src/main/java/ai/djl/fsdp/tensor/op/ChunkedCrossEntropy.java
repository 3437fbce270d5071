package ai.djl.fsdp.tensor.op;

import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

/**
 * Weighted cross-entropy over a vocabulary too wide to hold all of its logits or their gradient,
 * the kernel of a language model's loss: {@code sum_i w_i (-log softmax(z_i)[id_i]) / divisor} for
 * the {@link Targets} given, a chunk of rows at a time, in float32, without a graph. The gradient
 * is computed alongside the loss and reaches backward through the dot product of the inputs with
 * it, less the same product detached: that adds exactly 0 to the loss and exactly the precomputed
 * gradient to backward.
 *
 * <ul>
 *   <li>{@link #fromLogits}: the log-softmax over the vocabulary and its gradient are computed
 *       together in each chunk; the logits' gradient is kept in their own type (a 16-bit one
 *       rounded once from float32, as backward through a cast would round it).
 *   <li>{@link #fromHiddenStates} (a fused linear cross-entropy): each chunk's logits are the
 *       head's product {@code h W^T} in the compute type (as the head computes them), never all at
 *       once; the chunk's gradient {@code G} goes at once into the gradients of the hidden states
 *       ({@code G W}) and of the weight ({@code G^T h}, summed over the chunks in float32).
 * </ul>
 *
 * <p>Outside grad mode (evaluation) only the loss is computed. Logits that fit in one chunk ({@link
 * #fitsOneChunk}) are cheaper through libtorch's own {@link CrossEntropy} with autograd (a handful
 * of operators each way, where the chunks take some fifty); the caller makes that choice.
 */
public final class ChunkedCrossEntropy {

    /**
     * The elements of one chunk of logits given whole (3 MiB of float32): below the ranks'
     * allocator's mmap threshold (4 MiB, see docs/benchmarks.md), so a chunk's temporaries reuse
     * heap memory.
     */
    static final long CHUNK_ELEMENTS = 3L << 18;

    /**
     * The elements of one chunk of logits computed from hidden states (32 MiB of float32, in one
     * buffer reused by every chunk): each chunk adds its {@code [vocab, C]} product to the weight's
     * gradient, so chunks of a few rows would read and write that gradient too often.
     */
    private static final long HEAD_CHUNK_ELEMENTS = 8L << 20;

    private ChunkedCrossEntropy() {}

    /**
     * What each row of logits is scored against.
     *
     * @param ids the class of each row {@code [rows]}, int64; any valid class where the weight is 0
     * @param weights each row's weight {@code [rows, 1]}, float32 (1 for a trained token, 0 for one
     *     that does not count)
     * @param divisor the float32 scalar the weighted sum is divided by
     */
    public record Targets(NDArray ids, NDArray weights, NDArray divisor) {}

    /**
     * Returns whether {@code rows} rows of logits over {@code vocab} classes fit in one chunk, so
     * that libtorch's cross-entropy over all of them at once is the cheaper way.
     *
     * @param rows the rows of logits
     * @param vocab the classes
     * @return whether they fit in one chunk of logits
     */
    public static boolean fitsOneChunk(long rows, long vocab) {
        return rows * vocab <= CHUNK_ELEMENTS;
    }

    /**
     * Returns the loss of logits {@code [N, vocab]}, chunk by chunk; in grad mode backward reaches
     * the logits with their precomputed gradient.
     *
     * @param rows the logits {@code [N, vocab]}, float32, bfloat16 or float16
     * @param targets each row's class and weight, and the divisor
     * @return the loss, a float32 scalar in the logits' manager
     */
    public static NDArray fromLogits(NDArray rows, Targets targets) {
        NDManager manager = rows.getManager();
        long vocab = rows.getShape().get(1);
        long count = rows.getShape().get(0);
        boolean withGradient = Autograd.isGradMode();
        // The gradient of the logits, in their own type: what backward gives a 16-bit array from a
        // float32 softmax (rounded once), without a float32 copy of the logits or of it.
        Precision type = Precision.ofArray(rows);
        NDArray gradient = withGradient ? type.empty(manager, rows.getShape()) : null;
        // A float32 gradient is computed in place; otherwise each chunk goes through a float32
        // buffer: the softmax over the vocabulary and the loss are always float32.
        boolean inPlace = gradient != null && type == Precision.FLOAT32;
        long chunk = Math.min(count, Math.max(1, CHUNK_ELEMENTS / vocab));
        NDArray sum =
                Autograd.withGradMode(
                        false,
                        () -> {
                            try (NDManager buffers = manager.newSubManager()) {
                                NDArray buffer =
                                        inPlace
                                                ? null
                                                : Precision.FLOAT32.empty(
                                                        buffers, new Shape(chunk, vocab));
                                return sumOverChunks(
                                        manager,
                                        count,
                                        chunk,
                                        (range, scratch) -> {
                                            NDArray z =
                                                    inPlace
                                                            ? slice(gradient, range, scratch)
                                                            : leadingRows(buffer, range, scratch);
                                            TensorMemory.copy(slice(rows, range, scratch), z);
                                            NDArray part =
                                                    chunkSum(
                                                            z,
                                                            targets,
                                                            range,
                                                            withGradient,
                                                            scratch);
                                            if (gradient != null && !inPlace) {
                                                TensorMemory.copy(
                                                        z, slice(gradient, range, scratch));
                                            }
                                            return part;
                                        });
                            }
                        });
        NDArray loss = sum.div(targets.divisor());
        if (!withGradient) {
            return loss;
        }
        // d(loss)/d(rows) is the gradient computed above: its dot product with the rows, less
        // the same without a graph (exactly 0), carries it into backward.
        NDArray carrier = rows.reshape(-1).dot(gradient.reshape(-1));
        return carrier.sub(carrier.stopGradient()).add(loss);
    }

    /**
     * Returns the loss of the logits {@code h W^T} of hidden states {@code h [N, C]} and a head
     * weight {@code W [vocab, C]}, chunk by chunk; in grad mode backward reaches the hidden states
     * and, where it is in the graph, the weight with their precomputed gradients. A frozen weight
     * (a leaf that requires no gradient, as under LoRA) gets none.
     *
     * @param rows the hidden states {@code [N, C]}, in the compute type
     * @param weight the head weight {@code [vocab, C]}, in the compute type
     * @param targets each row's class and weight, and the divisor
     * @return the loss, a float32 scalar in the hidden states' manager
     */
    public static NDArray fromHiddenStates(NDArray rows, NDArray weight, Targets targets) {
        NDManager manager = rows.getManager();
        Shape weightShape = weight.getShape();
        long vocab = weightShape.get(0);
        long count = rows.getShape().get(0);
        boolean withGradient = Autograd.isGradMode();
        // Hidden states in training come from trained parameters. A trained head weight is in the
        // graph (a sharded one is a view of its unit's gradient leaf, so DJL's hasGradient, which
        // answers for leaves alone, would say no); a frozen head (LoRA), a leaf that requires no
        // gradient, needs no gradient of its own.
        NDArray hiddenGradient =
                withGradient ? Precision.FLOAT32.empty(manager, rows.getShape()) : null;
        NDArray weightGradient =
                withGradient && Autograd.isInGraph(weight)
                        ? Precision.FLOAT32.empty(manager, weightShape)
                        : null;
        HeadProducts products =
                new HeadProducts(
                        rows, weight, hiddenGradient, weightGradient, Precision.ofArray(rows));
        long chunk = evenChunk(count, Math.max(1, HEAD_CHUNK_ELEMENTS / vocab));
        NDArray sum =
                Autograd.withGradMode(
                        false,
                        () -> {
                            try (NDManager buffers = manager.newSubManager()) {
                                products.allocate(buffers, chunk, vocab);
                                return sumOverChunks(
                                        manager,
                                        count,
                                        chunk,
                                        (range, scratch) -> {
                                            NDArray z = products.logits(range, scratch);
                                            NDArray part =
                                                    chunkSum(
                                                            z,
                                                            targets,
                                                            range,
                                                            products.needsGradient(),
                                                            scratch);
                                            products.backward(range, scratch);
                                            return part;
                                        });
                            }
                        });
        NDArray loss = sum.div(targets.divisor());
        // d(loss)/dh and d(loss)/dW are the gradients computed above: their dot products with h
        // and W, less the same without a graph (exactly 0), carry them into backward. In float32,
        // so that a loss scale multiplies them before they are rounded to a 16-bit type.
        NDArray carrier = null;
        if (hiddenGradient != null) {
            carrier = Precision.FLOAT32.cast(rows).reshape(-1).dot(hiddenGradient.reshape(-1));
        }
        if (weightGradient != null) {
            NDArray weightCarrier =
                    Precision.FLOAT32.cast(weight).reshape(-1).dot(weightGradient.reshape(-1));
            carrier = carrier == null ? weightCarrier : carrier.add(weightCarrier);
        }
        return carrier == null ? loss : carrier.sub(carrier.stopGradient()).add(loss);
    }

    /**
     * The rows per chunk when {@code count} rows are taken at most {@code limit} at a time in as
     * few chunks as that allows, all of nearly one size: a short last chunk (28 of 1024 rows in
     * chunks of 166) would run the head's three products on a few rows, at half their rate.
     */
    static long evenChunk(long count, long limit) {
        if (count <= limit) {
            return count;
        }
        long chunks = (count + limit - 1) / limit;
        return (count + chunks - 1) / chunks;
    }

    /** The rows {@code start} (inclusive) to {@code end} (exclusive) of a chunk. */
    private record Rows(long start, long end) {

        NDIndex index() {
            return new NDIndex("{}:{}", start, end);
        }

        long count() {
            return end - start;
        }
    }

    /** One chunk's summed token losses, given its rows and a manager for its temporaries. */
    private interface Chunk {
        NDArray sum(Rows range, NDManager scratch);
    }

    private static NDArray sumOverChunks(NDManager manager, long count, long chunk, Chunk body) {
        NDArray sum = manager.zeros(new Shape(), DataType.FLOAT32);
        for (long start = 0; start < count; start += chunk) {
            long end = Math.min(count, start + chunk);
            try (NDManager scratch = manager.newSubManager()) {
                sum.addi(body.sum(new Rows(start, end), scratch));
            }
        }
        return sum;
    }

    /**
     * Returns the summed weighted token losses of one chunk of float32 logits {@code z [rows,
     * vocab]}, and (with {@code gradient}) turns {@code z} in place into its gradient {@code weight
     * (softmax - onehot) / divisor}: no other array of the vocabulary's width is made.
     */
    private static NDArray chunkSum(
            NDArray z, Targets all, Rows range, boolean gradient, NDManager scratch) {
        long rows = z.getShape().get(0);
        long vocab = z.getShape().get(1);
        NDArray ids = slice(all.ids(), range, scratch);
        NDArray weights = slice(all.weights(), range, scratch);
        z.subi(z.max(new int[] {1}, true));
        NDArray picked = z.gather(ids.reshape(-1, 1), 1);
        InPlace.exp(z);
        NDArray total = z.sum(new int[] {1}, true);
        // -log softmax at the target: log(sum exp(z - max)) - (z_target - max).
        NDArray sum = total.log().sub(picked).mul(weights).sum();
        if (gradient) {
            NDArray scale = weights.div(all.divisor());
            z.muli(scale.div(total));
            // The row width made on the device: a Number operand is copied from the host.
            NDArray width = scratch.full(new Shape(), (float) vocab, DataType.INT64);
            NDArray targets = scratch.arange(0, (int) rows, 1, DataType.INT64).mul(width).add(ids);
            InPlace.putAdd(z, targets, scale.neg().reshape(-1));
        }
        return sum;
    }

    /**
     * The head's products of a loss from hidden states {@code h [N, C]} and the head weight {@code
     * W [vocab, C]}: each chunk's logits {@code h W^T} into one reused buffer, and from the chunk's
     * gradient {@code G} the hidden states' gradient rows {@code G W} and the weight's gradient
     * {@code sum G^T h} in float32. Products run in the compute type, as the head's would; in
     * float16 the gradient products run in float32, since {@code G} is not yet multiplied by the
     * loss scale and its small entries would round to zero.
     */
    private static final class HeadProducts {

        private final NDArray rows;
        private final NDArray weight;
        private final NDArray hiddenGradient;
        private final NDArray weightGradient;
        private final Precision compute;
        private final Precision gradientType;
        private NDArray logits32;
        private NDArray logits;
        private NDArray gradient;
        private NDArray transposed;
        private NDArray gradientWeight;
        private NDArray weightProduct;

        HeadProducts(
                NDArray rows,
                NDArray weight,
                NDArray hiddenGradient,
                NDArray weightGradient,
                Precision compute) {
            this.rows = rows;
            this.weight = weight;
            this.hiddenGradient = hiddenGradient;
            this.weightGradient = weightGradient;
            this.compute = compute;
            this.gradientType =
                    compute == Precision.BFLOAT16 ? Precision.BFLOAT16 : Precision.FLOAT32;
        }

        boolean needsGradient() {
            return hiddenGradient != null || weightGradient != null;
        }

        /** Makes the chunk buffers, owned by {@code buffers}. */
        void allocate(NDManager buffers, long chunk, long vocab) {
            Shape shape = new Shape(chunk, vocab);
            logits32 = Precision.FLOAT32.empty(buffers, shape);
            logits = compute == Precision.FLOAT32 ? logits32 : compute.empty(buffers, shape);
            gradient =
                    gradientType == Precision.FLOAT32
                            ? logits32
                            : gradientType == compute ? logits : gradientType.empty(buffers, shape);
            transposed = weight.swapAxes(0, 1);
            transposed.attach(buffers);
            gradientWeight = gradientType.cast(weight);
            if (gradientWeight != weight) {
                gradientWeight.attach(buffers);
            }
            if (weightGradient != null
                    && gradientType != Precision.FLOAT32
                    && !weightGradient.getDevice().isGpu()) {
                // Each chunk's 16-bit product G^T h, one buffer for all chunks: on the CPU,
                // libtorch adds a 16-bit array to a float32 one element by element.
                weightProduct = gradientType.empty(buffers, weightGradient.getShape());
            }
        }

        /** Computes the chunk's logits and returns them in float32. */
        NDArray logits(Rows range, NDManager scratch) {
            NDArray z = leadingRows(logits, range, scratch);
            InPlace.mm(z, slice(rows, range, scratch), transposed);
            if (logits == logits32) {
                return z;
            }
            NDArray z32 = leadingRows(logits32, range, scratch);
            TensorMemory.copy(z, z32);
            return z32;
        }

        /**
         * Adds the chunk's share to the gradients, from its gradient left in the float32 logits.
         */
        void backward(Rows range, NDManager scratch) {
            if (!needsGradient()) {
                return;
            }
            NDArray g = leadingRows(gradient, range, scratch);
            if (gradient != logits32) {
                TensorMemory.copy(leadingRows(logits32, range, scratch), g);
            }
            NDArray h = gradientType.cast(slice(rows, range, scratch));
            h.attach(scratch);
            boolean exact = gradientType == Precision.FLOAT32;
            if (hiddenGradient != null) {
                NDArray target = slice(hiddenGradient, range, scratch);
                if (exact) {
                    InPlace.mm(target, g, gradientWeight);
                } else {
                    TensorMemory.copy(attached(g.matMul(gradientWeight), scratch), target);
                }
            }
            if (weightGradient != null) {
                NDArray gt = attached(g.swapAxes(0, 1), scratch);
                boolean first = range.start() == 0;
                if (exact) {
                    if (first) {
                        InPlace.mm(weightGradient, gt, h);
                    } else {
                        InPlace.addMm(weightGradient, gt, h);
                    }
                } else if (weightProduct == null) {
                    // On a GPU the mixed-type add is one kernel.
                    NDArray product = attached(gt.matMul(h), scratch);
                    if (first) {
                        TensorMemory.copy(product, weightGradient);
                    } else {
                        weightGradient.addi(product);
                    }
                } else {
                    InPlace.mm(weightProduct, gt, h);
                    if (first) {
                        TensorMemory.copy(weightProduct, weightGradient);
                    } else {
                        InPlace.addWidened(weightGradient, weightProduct);
                    }
                }
            }
        }
    }

    private static NDArray slice(NDArray array, Rows range, NDManager scratch) {
        return attached(array.get(range.index()), scratch);
    }

    /** The first rows of a chunk buffer, as many as {@code range} spans. */
    private static NDArray leadingRows(NDArray buffer, Rows range, NDManager scratch) {
        return attached(buffer.get(new NDIndex("0:{}", range.count())), scratch);
    }

    private static NDArray attached(NDArray array, NDManager scratch) {
        array.attach(scratch);
        return array;
    }
}
