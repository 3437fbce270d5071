package ai.djl.fsdp.dist.socket;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
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
 * sooner, by the {@link ai.djl.fsdp.dist.HeartbeatWatchdog}, which closes the ring). {@link
 * RingConnector} makes the links; {@link RingLinks} reads, writes and waits on them.
 */
final class Ring implements AutoCloseable {

    private static final Logger logger = LoggerFactory.getLogger(Ring.class);

    /** The most a pull copies at once, so a streamed other link keeps moving meanwhile. */
    private static final int PULL_BYTES = 4 << 20;

    private final RingLinks links;

    /** The previous rank's process id when this rank pulls from it, else -1. */
    private final long prevPid;

    /** Whether the next rank pulls from this rank. */
    private final boolean nextPulls;

    private final ByteBuffer offerOut = ByteBuffer.allocateDirect(16).order(ByteOrder.BIG_ENDIAN);
    private final ByteBuffer offerIn = ByteBuffer.allocateDirect(16).order(ByteOrder.BIG_ENDIAN);
    private final ByteBuffer ackOut = ByteBuffer.allocateDirect(1);
    private final ByteBuffer ackIn = ByteBuffer.allocateDirect(1);

    Ring(
            int rank,
            int size,
            int[] jobRanks,
            SocketChannel toNext,
            SocketChannel fromPrev,
            long prevPid,
            boolean nextPulls,
            Duration timeout)
            throws IOException {
        links = new RingLinks(rank, size, jobRanks, toNext, fromPrev, timeout);
        this.prevPid = prevPid;
        this.nextPulls = nextPulls;
    }

    /** A receive buffer is full: consume it and return the next one to fill, or null when done. */
    @FunctionalInterface
    interface Inbound {
        ByteBuffer filled(ByteBuffer full);
    }

    int next() {
        return links.next();
    }

    int prev() {
        return links.prev();
    }

    /** Returns the job rank at ring position {@code position}, which messages name. */
    int jobRank(int position) {
        return links.jobRank(position);
    }

    /** Returns how the two links move data, for logs. */
    String describeLinks() {
        return "from rank "
                + links.jobRank(prev())
                + (prevPid >= 0 ? " pulled" : " streamed")
                + ", to rank "
                + links.jobRank(next())
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
                    progress = links.writeNext(send) > 0;
                    sending = send.hasRemaining() || relay && receiving;
                } else if (!offerSent) {
                    progress = links.writeNext(offerOut) > 0;
                    offerSent = !offerOut.hasRemaining();
                } else {
                    ackIn.clear();
                    if (links.readNext(ackIn) > 0) {
                        send.position(send.limit());
                        sending = false;
                        progress = true;
                    }
                }
            }
            if (receiving) {
                if (prevPid < 0) {
                    progress |= links.readPrev(receive) > 0;
                } else if (!offerReceived) {
                    progress |= links.readPrev(offerIn) > 0;
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
                                        + links.jobRank(prev())
                                        + " offered fewer bytes"
                                        + " than rank "
                                        + links.jobRank(links.rank())
                                        + " expects; the ranks disagree on a"
                                        + " collective's size",
                                null,
                                links.jobRank(prev()));
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
                if (links.writePrev(ackOut) > 0) {
                    ackOwed = false;
                    progress = true;
                }
            }
            if (!progress && (sending || receiving || ackOwed)) {
                boolean writeNext = sending && (nextPulls ? !offerSent : send.hasRemaining());
                boolean readNext = sending && nextPulls && offerSent;
                boolean readPrev = receiving;
                links.awaitReady(writeNext, readNext, readPrev, ackOwed);
            }
        }
    }

    private void pull(long address, ByteBuffer receive, int length) throws PeerFailure {
        try {
            PeerMemory.read(prevPid, address, receive, length);
        } catch (IOException e) {
            throw new PeerFailure(
                    "rank "
                            + links.jobRank(prev())
                            + "'s memory could not be read ("
                            + e.getMessage()
                            + "): rank "
                            + links.jobRank(prev())
                            + " exited or was killed",
                    e,
                    links.jobRank(prev()));
        }
    }

    /** Closes both links, which fails any collective in flight here and soon at the neighbours. */
    @Override
    public void close() {
        links.close();
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
