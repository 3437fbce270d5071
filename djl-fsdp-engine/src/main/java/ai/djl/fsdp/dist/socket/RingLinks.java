package ai.djl.fsdp.dist.socket;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The two non-blocking socket channels of a {@link Ring} and the selector that waits on them: each
 * read and write moves what the socket takes at once, and each failure names the neighbour at fault
 * (a broken or closed link, or no progress for the collective timeout) or says that this rank's
 * group was closed.
 */
final class RingLinks implements AutoCloseable {

    private static final Logger logger = LoggerFactory.getLogger(RingLinks.class);

    private final int rank;
    private final int size;
    private final int[] jobRanks;
    private final SocketChannel toNext;
    private final SocketChannel fromPrev;
    private final Selector selector;
    private final SelectionKey nextKey;
    private final SelectionKey prevKey;
    private final long timeoutMillis;
    private final Duration timeout;

    /**
     * @param rank this rank's place in the ring
     * @param size the ring's length
     * @param jobRanks the job rank at each place of the ring, which messages name
     */
    RingLinks(
            int rank,
            int size,
            int[] jobRanks,
            SocketChannel toNext,
            SocketChannel fromPrev,
            Duration timeout)
            throws IOException {
        this.rank = rank;
        this.size = size;
        this.jobRanks = jobRanks.clone();
        this.toNext = toNext;
        this.fromPrev = fromPrev;
        this.timeout = timeout;
        timeoutMillis = Math.max(1, timeout.toMillis());
        selector = Selector.open();
        toNext.configureBlocking(false);
        fromPrev.configureBlocking(false);
        nextKey = toNext.register(selector, 0);
        prevKey = fromPrev.register(selector, 0);
    }

    int rank() {
        return rank;
    }

    /** Returns the job rank at place {@code position} of the ring. */
    int jobRank(int position) {
        return jobRanks[position];
    }

    int next() {
        return (rank + 1) % size;
    }

    int prev() {
        return (rank + size - 1) % size;
    }

    /** Writes what the link to the next rank takes now of {@code send}. */
    int writeNext(ByteBuffer send) throws PeerFailure {
        try {
            return toNext.write(send);
        } catch (IOException e) {
            throw linkFailure(next(), "the link to rank " + jobRank(next()) + " broke", e);
        }
    }

    /** Reads what has arrived from the previous rank into {@code receive}. */
    int readPrev(ByteBuffer receive) throws PeerFailure {
        int n;
        try {
            n = fromPrev.read(receive);
        } catch (IOException e) {
            throw linkFailure(prev(), "the link from rank " + jobRank(prev()) + " broke", e);
        }
        if (n < 0) {
            throw closedBy(prev());
        }
        return n;
    }

    /** Reads what the next rank sent back (a pull's acknowledgement) into {@code receive}. */
    int readNext(ByteBuffer receive) throws PeerFailure {
        int n;
        try {
            n = toNext.read(receive);
        } catch (IOException e) {
            throw linkFailure(next(), "the link to rank " + jobRank(next()) + " broke", e);
        }
        if (n < 0) {
            throw closedBy(next());
        }
        return n;
    }

    /** Writes what the link back to the previous rank takes now of {@code send}. */
    int writePrev(ByteBuffer send) throws PeerFailure {
        try {
            return fromPrev.write(send);
        } catch (IOException e) {
            throw linkFailure(prev(), "the link from rank " + jobRank(prev()) + " broke", e);
        }
    }

    /**
     * Waits until one of the asked-for directions is ready, for up to the collective timeout.
     *
     * @throws PeerFailure naming the neighbour that made no progress, or if the group was closed
     */
    void awaitReady(boolean writeNext, boolean readNext, boolean readPrev, boolean writePrev)
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
            throw new PeerFailure("the process group on rank " + jobRank(rank) + " was closed", e);
        }
        if (!selector.isOpen()) {
            throw new PeerFailure(
                    "the process group on rank " + jobRank(rank) + " was closed", null);
        }
        int peer = jobRank(readPrev || writePrev ? prev() : next());
        throw new PeerFailure(
                "rank "
                        + peer
                        + " did not take part for "
                        + timeout
                        + " while rank "
                        + jobRank(rank)
                        + " waited in a collective; it is alive (its heartbeats arrive) but"
                        + " busy for longer than the collective timeout, or not calling the same"
                        + " collectives",
                null,
                peer);
    }

    private PeerFailure closedBy(int position) {
        int peer = jobRank(position);
        return new PeerFailure(
                "rank "
                        + peer
                        + " closed its link with rank "
                        + jobRank(rank)
                        + " mid-collective (its process exited, was killed or gave up)",
                null,
                peer);
    }

    private PeerFailure linkFailure(int position, String what, IOException e) {
        int peer = jobRank(position);
        if (e instanceof ClosedChannelException) {
            return new PeerFailure("the process group on rank " + jobRank(rank) + " was closed", e);
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

    /** Closes both links and the selector. */
    @Override
    public void close() {
        Ring.closeQuietly(toNext);
        Ring.closeQuietly(fromPrev);
        try {
            selector.close();
        } catch (IOException e) {
            logger.debug("Closing the ring's selector failed", e);
        }
    }
}
