package ai.djl.fsdp.zoo.sharded;

import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.fsdp.tensor.op.Autograd;
import ai.djl.fsdp.tensor.op.CrossEntropy;
import ai.djl.fsdp.tensor.op.FusedLinear;
import ai.djl.fsdp.tensor.op.InPlace;
import ai.djl.fsdp.tensor.op.ScalarOps;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.loss.Loss;

/**
 * The causal language-modelling loss: the mean cross-entropy of the next token over the positions
 * whose label is a token. Labels are the token ids {@code [B, T]} that follow each input position,
 * or {@link #IGNORE} (-100, as in Hugging Face) where nothing is predicted (padding, prompts under
 * completion-only loss). Predictions are either
 *
 * <ul>
 *   <li>{@code NDList(logits [B, T, vocab])}, or
 *   <li>{@code NDList(hiddenStates [B, T, C], headWeight [vocab, C])}, what a {@link
 *       ai.djl.fsdp.zoo.CausalLM} returns in training with {@link
 *       ai.djl.fsdp.zoo.CausalLM#setFusedLossHead} on: the loss then computes the logits {@code h
 *       W^T} itself, a few rows at a time, and never holds all of them or their gradient (a fused
 *       linear cross-entropy) unless they fit in one chunk.
 * </ul>
 *
 * <p>By default the mean is over the batch's own tokens. Training sets {@link #setStepTokens} to
 * the target tokens of the whole optimizer step over all ranks and micro-batches ({@code
 * FsdpTrainer.countStepItems}): each batch then gives its share of the step's global token mean,
 * Hugging Face Trainer's normalization ({@code num_items_in_batch}).
 *
 * <p>Logits that fit in one chunk ({@value #CHUNK_ELEMENTS} elements, the host-bound shapes of
 * small models) take libtorch's own cross-entropy in float32 with autograd: a handful of operators
 * each way, where the chunked computation below takes some fifty. Larger ones never exist whole:
 * the log-softmax over the vocabulary and its gradient are computed together, a chunk of rows at a
 * time, in float32, without a graph. From logits, the loss's backward is one product with the
 * precomputed gradient of the logits. From hidden states, each chunk's logits are the head's
 * product in the compute type (as the head computes them), and the chunk's gradient goes at once
 * into the gradients of the hidden states ({@code G W}) and of the weight ({@code G^T h}, summed
 * over the chunks in float32); backward then reaches both through one product each with those
 * precomputed gradients, which is exact. Outside grad mode (evaluation) only the loss is computed.
 */
public final class CausalLmLoss extends Loss {

    /** The label of a position that is not trained on (Hugging Face's {@code -100}). */
    public static final long IGNORE = -100;

    /**
     * The elements of one chunk of logits given whole (3 MiB of float32): below the ranks'
     * allocator's mmap threshold (4 MiB, see docs/benchmarks.md), so a chunk's temporaries reuse
     * heap memory.
     */
    static final long CHUNK_ELEMENTS = 3L << 18;

    /**
     * The elements of one chunk of logits the loss computes from hidden states (32 MiB of float32,
     * in one buffer reused by every chunk): each chunk adds its {@code [vocab, C]} product to the
     * weight's gradient, so chunks of a few rows would read and write that gradient too often.
     */
    private static final long HEAD_CHUNK_ELEMENTS = 8L << 20;

    private long stepTokens;

    /** Creates the loss. */
    public CausalLmLoss() {
        super("causal_lm_loss");
    }

    /**
     * Sets the divisor of the summed token losses: the target tokens of the whole optimizer step
     * over all ranks and micro-batches; 0 returns to each batch's own mean.
     *
     * @param tokens the step's target tokens, or 0
     */
    public void setStepTokens(long tokens) {
        if (tokens < 0) {
            throw new IllegalArgumentException("A token count cannot be negative: " + tokens);
        }
        this.stepTokens = tokens;
    }

    @Override
    public NDArray evaluate(NDList labels, NDList predictions) {
        NDArray flat = labels.head().reshape(-1);
        switch (predictions.size()) {
            case 1:
                return fromLogits(flat, predictions.head());
            case 2:
                return fromHiddenStates(flat, predictions.get(0), predictions.get(1));
            default:
                throw new IllegalArgumentException(
                        "The causal LM loss takes NDList(logits [B, T, vocab]) or NDList(hidden"
                                + " states [B, T, C], head weight [vocab, C]) (a CausalLM with"
                                + " setFusedLossHead(true)), got "
                                + predictions.size()
                                + " arrays");
        }
    }

    /**
     * The flattened labels, the token ids to pick (0 where ignored), each position's weight (1 or
     * 0) and the divisor of the summed losses.
     */
    private record Targets(NDArray ids, NDArray weights, NDArray divisor) {}

    private Targets targets(NDArray flat) {
        NDArray trained = ScalarOps.neq(flat, IGNORE);
        NDArray weights = trained.toType(DataType.FLOAT32, false);
        return new Targets(flat.mul(trained), weights.reshape(-1, 1), divisor(flat, weights));
    }

    /**
     * The divisor of the summed token losses: the trained tokens, 1 each in {@code weights}, or
     * counted in {@code flat} when {@code weights} is null.
     */
    private NDArray divisor(NDArray flat, NDArray weights) {
        if (stepTokens > 0) {
            return flat.getManager().full(new Shape(), (float) stepTokens);
        }
        NDArray trained = weights != null ? weights : ScalarOps.neq(flat, IGNORE);
        // A step (or batch) without target tokens has loss 0, not 0 / 0.
        return ScalarOps.maximum(trained.toType(DataType.FLOAT32, false).sum(), 1f);
    }

    /**
     * Returns whether {@code rows} rows of logits over {@code vocab} classes fit in one chunk, so
     * that the loss takes libtorch's cross-entropy on all of them at once.
     */
    static boolean fitsOneChunk(long rows, long vocab) {
        return rows * vocab <= CHUNK_ELEMENTS;
    }

    /**
     * The mean loss of logits {@code [N, vocab]} that fit in one chunk, by libtorch's cross-entropy
     * in float32 with autograd: backward rounds the logits' float32 gradient once to their type, as
     * the chunked computation does; from hidden states the head's two gradient products then run in
     * the compute type, as PyTorch's autocast runs them (the chunked computation runs float16's in
     * float32, before the loss scale reaches them).
     */
    private NDArray wholeLoss(NDArray flat, NDArray rows) {
        return CrossEntropy.sum(Precision.FLOAT32.cast(rows), flat, IGNORE)
                .div(divisor(flat, null));
    }

    private NDArray fromLogits(NDArray flat, NDArray logits) {
        long vocab = logits.getShape().get(logits.getShape().dimension() - 1);
        NDManager manager = logits.getManager();
        NDArray rows = logits.reshape(-1, vocab);
        long count = rows.getShape().get(0);
        if (fitsOneChunk(count, vocab)) {
            return wholeLoss(flat, rows);
        }
        Targets targets = targets(flat);
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
                                                    crossEntropy(
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

    private NDArray fromHiddenStates(NDArray flat, NDArray hidden, NDArray weight) {
        Shape weightShape = weight.getShape();
        long width = hidden.getShape().get(hidden.getShape().dimension() - 1);
        if (weightShape.dimension() != 2 || weightShape.get(1) != width) {
            throw new IllegalArgumentException(
                    "The head weight must be [vocab, C] with C = the hidden states' last axis ("
                            + width
                            + "), got "
                            + weightShape);
        }
        long vocab = weightShape.get(0);
        NDManager manager = hidden.getManager();
        NDArray rows = hidden.reshape(-1, width);
        long count = rows.getShape().get(0);
        if (fitsOneChunk(count, vocab)) {
            // The head's product in the compute type, as the head computes it.
            return wholeLoss(flat, FusedLinear.apply(rows, weight, null));
        }
        Targets targets = targets(flat);
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
                                            NDArray chunkSum =
                                                    crossEntropy(
                                                            z,
                                                            targets,
                                                            range,
                                                            products.needsGradient(),
                                                            scratch);
                                            products.backward(range, scratch);
                                            return chunkSum;
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
    private static NDArray crossEntropy(
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
