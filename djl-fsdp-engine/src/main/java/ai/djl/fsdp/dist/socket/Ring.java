package ai.djl.fsdp.dist.socket;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This rank's two links in the ring: one to the next rank and one from the previous rank. One
 * thread drives both through a selector, so sending and receiving overlap with no extra thread, and
 * the bytes go straight between the links and the arrays' memory.
 *
 * <p>A link moves data in one of two ways, chosen per link when the ring forms:
 *
 * <ul>
 *   <li>streamed: the sender writes the bytes into the socket, the receiver reads them out;
 *   <li>pulled, between processes on one machine that allow it: the sender writes only an offer
 *       (the address and length of its bytes), the receiver copies them straight out of the
 *       sender's memory ({@link PeerMemory}) and answers with one acknowledgement byte, after which
 *       the sender may change or free them. One copy instead of two, and no kernel socket buffers.
 * </ul>
 *
 * <p>Failures name the neighbour: end of stream or a reset on a link, a pull from a process that is
 * gone, or no progress on a link for the collective timeout (a neighbour that has stopped is found
 * sooner, by the {@link Watchdog}, which closes the ring). {@link RingConnector} makes the links.
 */
final class Ring implements AutoCloseable {

    private static final Logger logger = LoggerFactory.getLogger(Ring.class);

    /** The most a pull copies at once, so a streamed other link keeps moving meanwhile. */
    private static final int PULL_BYTES = 4 << 20;

    private final int rank;
    private final int size;
    private final SocketChannel toNext;
    private final SocketChannel fromPrev;

    /** The previous rank's process id when this rank pulls from it, else -1. */
    private final long prevPid;

    /** Whether the next rank pulls from this rank. */
    private final boolean nextPulls;

    private final Selector selector;
    private final SelectionKey nextKey;
    private final SelectionKey prevKey;
    private final long timeoutMillis;
    private final Duration timeout;
    private final ByteBuffer offerOut = ByteBuffer.allocateDirect(16).order(ByteOrder.BIG_ENDIAN);
    private final ByteBuffer offerIn = ByteBuffer.allocateDirect(16).order(ByteOrder.BIG_ENDIAN);
    private final ByteBuffer ackOut = ByteBuffer.allocateDirect(1);
    private final ByteBuffer ackIn = ByteBuffer.allocateDirect(1);

    Ring(
            int rank,
            int size,
            SocketChannel toNext,
            SocketChannel fromPrev,
            long prevPid,
            boolean nextPulls,
            Duration timeout)
            throws IOException {
        this.rank = rank;
        this.size = size;
        this.toNext = toNext;
        this.fromPrev = fromPrev;
        this.prevPid = prevPid;
        this.nextPulls = nextPulls;
        this.timeout = timeout;
        timeoutMillis = Math.max(1, timeout.toMillis());
        selector = Selector.open();
        toNext.configureBlocking(false);
        fromPrev.configureBlocking(false);
        nextKey = toNext.register(selector, 0);
        prevKey = fromPrev.register(selector, 0);
    }

    /** A receive buffer is full: consume it and return the next one to fill, or null when done. */
    @FunctionalInterface
    interface Inbound {
        ByteBuffer filled(ByteBuffer full);
    }

    int next() {
        return (rank + 1) % size;
    }

    int prev() {
        return (rank + size - 1) % size;
    }

    /** Returns how the two links move data, for logs. */
    String describeLinks() {
        return "from rank "
                + prev()
                + (prevPid >= 0 ? " pulled" : " streamed")
                + ", to rank "
                + next()
                + (nextPulls ? " pulled" : " streamed");
    }

    /**
     * Sends {@code send} to the next rank while receiving from the previous one into {@code
     * receive}, then into each buffer {@code inbound} returns, until it returns null. Returns once
     * both are done; {@code send}'s bytes may change from then on.
     */
    void exchange(ByteBuffer send, ByteBuffer receive, Inbound inbound) throws PeerFailure {
        pump(send, receive, inbound, false);
    }

    /** Sends all of {@code send} to the next rank. */
    void send(ByteBuffer send) throws PeerFailure {
        pump(send, null, full -> null, false);
    }

    /** Receives {@code receive.remaining()} bytes from the previous rank. */
    void receive(ByteBuffer receive) throws PeerFailure {
        pump(null, receive, full -> null, false);
    }

    /**
     * Receives {@code data} from the previous rank and passes it on to the next rank. Streamed
     * links pass each byte on as soon as it has arrived, so a broadcast flows through every rank at
     * once; a pulled link can offer the data only once it is all here.
     */
    void relay(ByteBuffer data) throws PeerFailure {
        if (prevPid >= 0 || nextPulls) {
            receive(data.duplicate());
            send(data.duplicate());
        } else {
            pump(data.duplicate(), data.duplicate(), full -> null, true);
        }
    }

    private void pump(ByteBuffer send, ByteBuffer receive, Inbound inbound, boolean relay)
            throws PeerFailure {
        int sendEnd = send == null ? 0 : send.limit();
        boolean sending = send != null;
        boolean offerSent = false;
        boolean receiving = receive != null;
        boolean offerReceived = false;
        long offerAddress = 0;
        long offerLeft = 0;
        boolean ackOwed = false;
        if (sending && nextPulls) {
            offerOut.clear();
            offerOut.putLong(PeerMemory.address(send)).putLong(send.remaining()).flip();
        }
        while (sending || receiving || ackOwed) {
            boolean progress = false;
            if (sending) {
                if (!nextPulls) {
                    if (relay) {
                        send.limit(receiving ? receive.position() : sendEnd);
                    }
                    progress = write(send) > 0;
                    sending = send.hasRemaining() || relay && receiving;
                } else if (!offerSent) {
                    progress = write(offerOut) > 0;
                    offerSent = !offerOut.hasRemaining();
                } else {
                    ackIn.clear();
                    if (readAck() > 0) {
                        send.position(send.limit());
                        sending = false;
                        progress = true;
                    }
                }
            }
            if (receiving) {
                if (prevPid < 0) {
                    progress |= read(receive) > 0;
                } else if (!offerReceived) {
                    progress |= read(offerIn) > 0;
                    if (!offerIn.hasRemaining()) {
                        offerIn.flip();
                        offerAddress = offerIn.getLong();
                        offerLeft = offerIn.getLong();
                        offerIn.clear();
                        offerReceived = true;
                    }
                } else {
                    int length =
                            (int) Math.min(Math.min(receive.remaining(), PULL_BYTES), offerLeft);
                    if (length == 0 && receive.hasRemaining()) {
                        throw new PeerFailure(
                                "rank "
                                        + prev()
                                        + " offered fewer bytes"
                                        + " than rank "
                                        + rank
                                        + " expects; the ranks disagree on a"
                                        + " collective's size",
                                null,
                                prev());
                    }
                    pull(offerAddress, receive, length);
                    offerAddress += length;
                    offerLeft -= length;
                    progress = true;
                }
                boolean streamedOrOffered = prevPid < 0 || offerReceived;
                if (streamedOrOffered && !receive.hasRemaining()) {
                    receive = inbound.filled(receive);
                    progress = true;
                    if (receive == null) {
                        receiving = false;
                        ackOwed = prevPid >= 0;
                        ackOut.clear();
                    }
                }
            }
            if (ackOwed) {
                if (writeAck() > 0) {
                    ackOwed = false;
                    progress = true;
                }
            }
            if (!progress && (sending || receiving || ackOwed)) {
                boolean writeNext = sending && (nextPulls ? !offerSent : send.hasRemaining());
                boolean readNext = sending && nextPulls && offerSent;
                boolean readPrev = receiving;
                awaitReady(writeNext, readNext, readPrev, ackOwed);
            }
        }
    }

    private int write(ByteBuffer send) throws PeerFailure {
        try {
            return toNext.write(send);
        } catch (IOException e) {
            throw linkFailure(next(), "the link to rank " + next() + " broke", e);
        }
    }

    private int read(ByteBuffer receive) throws PeerFailure {
        int n;
        try {
            n = fromPrev.read(receive);
        } catch (IOException e) {
            throw linkFailure(prev(), "the link from rank " + prev() + " broke", e);
        }
        if (n < 0) {
            throw closedBy(prev());
        }
        return n;
    }

    private int readAck() throws PeerFailure {
        int n;
        try {
            n = toNext.read(ackIn);
        } catch (IOException e) {
            throw linkFailure(next(), "the link to rank " + next() + " broke", e);
        }
        if (n < 0) {
            throw closedBy(next());
        }
        return n;
    }

    private int writeAck() throws PeerFailure {
        try {
            return fromPrev.write(ackOut);
        } catch (IOException e) {
            throw linkFailure(prev(), "the link from rank " + prev() + " broke", e);
        }
    }

    private void pull(long address, ByteBuffer receive, int length) throws PeerFailure {
        try {
            PeerMemory.read(prevPid, address, receive, length);
        } catch (IOException e) {
            throw new PeerFailure(
                    "rank "
                            + prev()
                            + "'s memory could not be read ("
                            + e.getMessage()
                            + "): rank "
                            + prev()
                            + " exited or was killed",
                    e,
                    prev());
        }
    }

    private PeerFailure closedBy(int peer) {
        return new PeerFailure(
                "rank "
                        + peer
                        + " closed its link with rank "
                        + rank
                        + " mid-collective (its process exited, was killed or gave up)",
                null,
                peer);
    }

    private PeerFailure linkFailure(int peer, String what, IOException e) {
        if (e instanceof ClosedChannelException) {
            return new PeerFailure("the process group on rank " + rank + " was closed", e);
        }
        return new PeerFailure(
                what
                        + " ("
                        + e.getMessage()
                        + "): rank "
                        + peer
                        + " exited, was killed or is unreachable",
                e,
                peer);
    }

    private void awaitReady(
            boolean writeNext, boolean readNext, boolean readPrev, boolean writePrev)
            throws PeerFailure {
        try {
            nextKey.interestOps(
                    (writeNext ? SelectionKey.OP_WRITE : 0)
                            | (readNext ? SelectionKey.OP_READ : 0));
            prevKey.interestOps(
                    (readPrev ? SelectionKey.OP_READ : 0)
                            | (writePrev ? SelectionKey.OP_WRITE : 0));
            int ready = selector.select(timeoutMillis);
            selector.selectedKeys().clear();
            if (ready > 0) {
                return;
            }
        } catch (IOException | RuntimeException e) {
            // A closed selector or cancelled key: the group is shutting down.
            throw new PeerFailure("the process group on rank " + rank + " was closed", e);
        }
        if (!selector.isOpen()) {
            throw new PeerFailure("the process group on rank " + rank + " was closed", null);
        }
        int peer = readPrev || writePrev ? prev() : next();
        throw new PeerFailure(
                "rank "
                        + peer
                        + " did not take part for "
                        + timeout
                        + " while rank "
                        + rank
                        + " waited in a collective; it is alive (its heartbeats arrive) but"
                        + " busy for longer than the collective timeout, or not calling the same"
                        + " collectives",
                null,
                peer);
    }

    /** Closes both links, which fails any collective in flight here and soon at the neighbours. */
    @Override
    public void close() {
        closeQuietly(toNext);
        closeQuietly(fromPrev);
        try {
            selector.close();
        } catch (IOException e) {
            logger.debug("Closing the ring's selector failed", e);
        }
    }

    static void closeQuietly(AutoCloseable closeable) {
        if (closeable != null) {
            try {
                closeable.close();
            } catch (Exception e) {
                logger.debug("Closing a ring link failed", e);
            }
        }
    }
}
