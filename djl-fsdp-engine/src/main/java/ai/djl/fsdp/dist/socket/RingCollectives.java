package ai.djl.fsdp.dist.socket;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.function.IntFunction;

/**
 * The ring algorithms NCCL uses, over raw bytes: all-gather and reduce-scatter in {@code N-1} steps
 * that each move {@code 1/N} of the data, all-reduce as the two in turn (each rank sends {@code
 * 2(N-1)/N} of the array: bandwidth-optimal), and a broadcast relayed along the ring as it arrives.
 * Reductions combine the incoming bytes chunk by chunk as they land in a staging buffer, while they
 * are still in cache, and while the neighbours keep sending.
 *
 * <p>Runs on the group's communication thread only.
 */
final class RingCollectives {

    /**
     * The header each rank sends ahead of a collective's data (sequence number, kind, bytes and a
     * parameter: the root, or the element type and operation); see {@link #agree}.
     */
    private static final int HEADER_BYTES = 24;

    private final Ring ring;
    private final int rank;
    private final int size;
    private final ByteBuffer staging;
    private final ByteBuffer ownHeader = direct(HEADER_BYTES);
    private final ByteBuffer peerHeader = direct(HEADER_BYTES);
    private final ByteBuffer barrierPiece = direct(1);
    private final ByteBuffer barrierAll;
    private ByteBuffer[] partials = new ByteBuffer[] {direct(0), direct(0)};
    private ByteBuffer[] relay = new ByteBuffer[] {direct(0), direct(0)};
    private long sequence;

    /**
     * @param ring this rank's links; null in a world of one rank, which has no neighbours
     * @param chunkBytes how much of a reduction's incoming data is combined at a time
     */
    RingCollectives(Ring ring, int rank, int size, int chunkBytes) {
        this.ring = ring;
        this.rank = rank;
        this.size = size;
        // A whole number of elements of every supported type.
        staging = direct(Math.max(Long.BYTES, chunkBytes - chunkBytes % Long.BYTES));
        barrierAll = direct(size);
    }

    /** Every rank's {@code input} into {@code output}, rank r's at byte {@code r * input}. */
    void allGather(ByteBuffer input, ByteBuffer output) throws PeerFailure {
        int segmentBytes = input.remaining();
        agree(Kind.ALL_GATHER, output.remaining(), 0);
        ByteBuffer own = view(output, rank * segmentBytes, segmentBytes);
        // FSDP gathers in place (the input is this rank's piece of the output): nothing to copy.
        if (segmentBytes > 0 && PeerMemory.address(own) != PeerMemory.address(input)) {
            own.put(input.duplicate());
        }
        gatherSteps(i -> view(output, i * segmentBytes, segmentBytes));
    }

    /** Reduces {@code input} across ranks and leaves piece {@code rank} in {@code output}. */
    void reduceScatter(ByteBuffer input, ByteBuffer output, ElementReduction reduction, int divisor)
            throws PeerFailure {
        int segmentBytes = output.remaining();
        agree(Kind.REDUCE_SCATTER, input.remaining(), reduction.code(divisor));
        if (size == 1) {
            output.duplicate().put(input.duplicate());
            return;
        }
        IntFunction<ByteBuffer> piece = i -> view(input, i * segmentBytes, segmentBytes);
        // Kept for the next call: FSDP reduce-scatters pieces of the same sizes every step.
        if (partials[0].capacity() < segmentBytes && size > 2) {
            partials = new ByteBuffer[] {direct(segmentBytes), direct(segmentBytes)};
        }
        // Partial sums go to scratch (the input stays intact, as NCCL leaves it); the last step
        // writes the finished piece into the output.
        reduceSteps(
                piece,
                (step, i) ->
                        step == size - 2
                                ? output.duplicate()
                                : view(partials[step % 2], 0, segmentBytes),
                reduction,
                divisor);
    }

    /** Reduces {@code array} across ranks in place; its pieces may differ by one element. */
    void allReduce(ByteBuffer array, ElementReduction reduction, int divisor) throws PeerFailure {
        int elementBytes = reduction.elementBytes();
        long elements = array.remaining() / elementBytes;
        agree(Kind.ALL_REDUCE, array.remaining(), reduction.code(divisor));
        IntFunction<ByteBuffer> piece =
                i -> {
                    long start = i * (elements / size) + Math.min(i, elements % size);
                    long count = elements / size + (i < elements % size ? 1 : 0);
                    return view(array, (int) (start * elementBytes), (int) (count * elementBytes));
                };
        reduceSteps(piece, (step, i) -> piece.apply(i), reduction, divisor);
        gatherSteps(piece);
    }

    /**
     * Piece {@code r} of {@code input} to rank {@code r}, rank {@code s}'s piece for this rank into
     * piece {@code s} of {@code output}. The ring links only neighbours, so pieces are relayed: at
     * step {@code s} each rank passes on {@code N-s} pieces, keeping the first of what it receives
     * (from rank {@code rank-s}) and forwarding the rest, which are for the ranks after it. Each
     * rank sends {@code N(N-1)/2} pieces (one for two ranks, as a reduce-scatter's), against {@code
     * N-1} for direct sends: for a handful of ranks what quantized gradients save outweighs the
     * relaying.
     */
    void allToAll(ByteBuffer input, ByteBuffer output) throws PeerFailure {
        int piece = input.remaining() / size;
        agree(Kind.ALL_TO_ALL, input.remaining(), 0);
        view(output, rank * piece, piece).put(view(input, rank * piece, piece));
        if (size == 1) {
            return;
        }
        int bundle = (size - 1) * piece;
        if (relay[0].capacity() < bundle) {
            relay = new ByteBuffer[] {direct(bundle), direct(bundle)};
        }
        for (int k = 1; k < size; k++) {
            view(relay[0], (k - 1) * piece, piece).put(view(input, index(rank + k) * piece, piece));
        }
        ByteBuffer send = view(relay[0], 0, bundle);
        for (int step = 1; step < size; step++) {
            ByteBuffer received = view(relay[step % 2], 0, (size - step) * piece);
            ring.exchange(send, received.duplicate(), full -> null);
            view(output, index(rank - step) * piece, piece).put(view(received, 0, piece));
            send = view(received, piece, (size - step - 1) * piece);
        }
    }

    /** Copies {@code root}'s {@code array} into every rank's. */
    void broadcast(ByteBuffer array, int root) throws PeerFailure {
        agree(Kind.BROADCAST, array.remaining(), root);
        if (size == 1) {
            return;
        }
        if (rank == root) {
            ring.send(array.duplicate());
        } else if (ring.next() == root) {
            ring.receive(array.duplicate());
        } else {
            ring.relay(array);
        }
    }

    /** Returns once every rank has called it: a one-byte all-gather. */
    void barrier() throws PeerFailure {
        allGather(barrierPiece.duplicate(), barrierAll.duplicate());
    }

    /**
     * Exchanges a header with the neighbours so that a rank calling a different collective, or a
     * different size, is caught at once with a clear message instead of corrupting data or hanging.
     */
    private void agree(Kind kind, long bytes, int parameter) throws PeerFailure {
        sequence++;
        if (size == 1) {
            return;
        }
        ownHeader.clear();
        ownHeader.putLong(sequence).putInt(kind.ordinal()).putLong(bytes).putInt(parameter);
        ownHeader.flip();
        peerHeader.clear();
        ring.exchange(ownHeader, peerHeader, full -> null);
        peerHeader.flip();
        long peerSequence = peerHeader.getLong();
        int peerKind = peerHeader.getInt();
        long peerBytes = peerHeader.getLong();
        int peerParameter = peerHeader.getInt();
        if (peerSequence != sequence
                || peerKind != kind.ordinal()
                || peerBytes != bytes
                || peerParameter != parameter) {
            String difference =
                    peerParameter != parameter && peerKind == kind.ordinal() && peerBytes == bytes
                            ? " with a different element type, operation or root"
                            : "";
            throw new PeerFailure(
                    "ranks disagree on collective #"
                            + sequence
                            + ": rank "
                            + ring.jobRank(ring.prev())
                            + " called "
                            + describe(peerSequence, peerKind, peerBytes)
                            + " but rank "
                            + ring.jobRank(rank)
                            + " called "
                            + describe(sequence, kind.ordinal(), bytes)
                            + difference
                            + "; every rank must call the same"
                            + " collectives in the same order",
                    null);
        }
    }

    private static String describe(long sequence, int kind, long bytes) {
        String name =
                kind >= 0 && kind < Kind.values().length
                        ? Kind.values()[kind].toString()
                        : "unknown(" + kind + ')';
        return name + " #" + sequence + " of " + bytes + " bytes";
    }

    /**
     * All-gather steps: at step s, send piece {@code rank-s} and receive piece {@code rank-s-1}.
     */
    private void gatherSteps(IntFunction<ByteBuffer> piece) throws PeerFailure {
        for (int step = 0; step < size - 1; step++) {
            ring.exchange(
                    piece.apply(index(rank - step)),
                    piece.apply(index(rank - step - 1)),
                    full -> null);
        }
    }

    /**
     * Reduce-scatter steps: at step s, send the partial sum of piece {@code rank-s-1} and add the
     * incoming partial of piece {@code rank-s-2} to this rank's own; after {@code N-1} steps this
     * rank holds the full sum of piece {@code rank}.
     */
    private void reduceSteps(
            IntFunction<ByteBuffer> input,
            Destination destination,
            ElementReduction reduction,
            int divisor)
            throws PeerFailure {
        ByteBuffer send = input.apply(index(rank - 1));
        for (int step = 0; step < size - 1; step++) {
            int i = index(rank - step - 2);
            ByteBuffer target = destination.of(step, i);
            boolean last = step == size - 2;
            receiveReducing(send, input.apply(i), target, reduction, last ? divisor : 1);
            send = target;
        }
    }

    /** Sends {@code send} while receiving the peer's piece and writing {@code own + received}. */
    private void receiveReducing(
            ByteBuffer send,
            ByteBuffer own,
            ByteBuffer target,
            ElementReduction reduction,
            int divisor)
            throws PeerFailure {
        int total = own.remaining();
        ByteBuffer chunk = staging.duplicate().order(ByteOrder.nativeOrder());
        chunk.clear().limit(Math.min(chunk.capacity(), total));
        int[] done = {0};
        ring.exchange(
                send.duplicate(),
                chunk,
                full -> {
                    int length = full.position();
                    full.flip();
                    reduction.combine(
                            full,
                            view(own, done[0], length),
                            view(target, done[0], length),
                            divisor);
                    done[0] += length;
                    if (done[0] == total) {
                        return null;
                    }
                    full.clear().limit(Math.min(full.capacity(), total - done[0]));
                    return full;
                });
    }

    private int index(int i) {
        return Math.floorMod(i, size);
    }

    /**
     * Returns bytes {@code [offset, offset + length)} of {@code buffer}'s content, native order.
     */
    private static ByteBuffer view(ByteBuffer buffer, int offset, int length) {
        return buffer.slice(buffer.position() + offset, length).order(ByteOrder.nativeOrder());
    }

    private static ByteBuffer direct(int bytes) {
        return ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
    }

    /** Where step {@code step} of a reduce-scatter writes its sums for piece {@code i}. */
    @FunctionalInterface
    private interface Destination {
        ByteBuffer of(int step, int i);
    }

    /** The collectives, as named in a mismatch message. */
    private enum Kind {
        ALL_GATHER,
        REDUCE_SCATTER,
        ALL_REDUCE,
        BROADCAST,
        ALL_TO_ALL
    }
}
