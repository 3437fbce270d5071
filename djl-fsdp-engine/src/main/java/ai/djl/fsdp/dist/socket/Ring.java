package ai.djl.fsdp.dist.socket;

import ai.djl.fsdp.rendezvous.Store;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;

/**
 * This rank's two links in the ring: a connection to the next rank, which it only writes, and
 * one from the previous rank, which it only reads. One thread drives both through a selector, so
 * sending and receiving overlap with no extra thread: the bytes go straight between the sockets
 * and the tensors' memory.
 *
 * <p>Failures name the neighbour: end of stream or a reset on a link, or no progress on a link
 * for the timeout.
 */
final class Ring implements AutoCloseable {

    private static final Logger logger = LoggerFactory.getLogger(Ring.class);

    /** "DJLR": the first bytes of a ring handshake. */
    private static final int MAGIC = 0x444A4C52;
    private static final int MAX_TOKEN_BYTES = 4096;
    private static final Duration HANDSHAKE_TIMEOUT = Duration.ofSeconds(10);

    private final int rank;
    private final int size;
    private final SocketChannel toNext;
    private final SocketChannel fromPrev;
    private final Selector selector;
    private final SelectionKey sendKey;
    private final SelectionKey receiveKey;
    private final long timeoutMillis;
    private final Duration timeout;

    private Ring(int rank, int size, SocketChannel toNext, SocketChannel fromPrev,
            Duration timeout) throws IOException {
        this.rank = rank;
        this.size = size;
        this.toNext = toNext;
        this.fromPrev = fromPrev;
        this.timeout = timeout;
        timeoutMillis = Math.max(1, timeout.toMillis());
        selector = Selector.open();
        toNext.configureBlocking(false);
        fromPrev.configureBlocking(false);
        sendKey = toNext.register(selector, 0);
        receiveKey = fromPrev.register(selector, 0);
    }

    /** A receive buffer is full: consume it and return the next one to fill, or null when done. */
    @FunctionalInterface
    interface Inbound {
        ByteBuffer filled(ByteBuffer full);
    }

    /**
     * Connects this rank into the ring of {@code size} ranks: publishes its listening address in
     * the store, connects to the next rank, accepts the previous one (refusing anyone without the
     * job token), and waits until every rank has done the same.
     */
    static Ring connect(Store store, int rank, int size, byte[] token, InetAddress localAddress,
            Duration timeout, int socketBufferBytes) throws IOException {
        int next = (rank + 1) % size;
        int prev = (rank + size - 1) % size;
        long deadline = System.nanoTime() + timeout.toNanos();
        SocketChannel toNext = null;
        SocketChannel fromPrev = null;
        try (ServerSocketChannel listener = ServerSocketChannel.open()) {
            if (socketBufferBytes > 0) {
                // Set before listening so that the accepted socket's window scale fits it.
                listener.setOption(StandardSocketOptions.SO_RCVBUF, socketBufferBytes);
            }
            listener.bind(new InetSocketAddress(localAddress, 0));
            store.set(addressKey(rank), (localAddress.getHostAddress() + ' '
                    + listener.socket().getLocalPort()).getBytes(StandardCharsets.UTF_8));

            String[] nextAddress = new String(store.get(addressKey(next)), StandardCharsets.UTF_8)
                    .split(" ");
            toNext = SocketChannel.open();
            configure(toNext, socketBufferBytes);
            toNext.socket().connect(new InetSocketAddress(nextAddress[0],
                    Integer.parseInt(nextAddress[1])), millisUntil(deadline));
            DataOutputStream hello = new DataOutputStream(toNext.socket().getOutputStream());
            hello.writeInt(MAGIC);
            hello.writeInt(rank);
            hello.writeInt(token.length);
            hello.write(token);
            hello.flush();

            fromPrev = acceptPrevious(listener, prev, token, deadline);
            configure(fromPrev, socketBufferBytes);
            store.barrier("socket-ring", rank, size);
            return new Ring(rank, size, toNext, fromPrev, timeout);
        } catch (IOException | RuntimeException e) {
            closeQuietly(toNext);
            closeQuietly(fromPrev);
            throw e;
        }
    }

    private static String addressKey(int rank) {
        return "socket-ring/address/" + rank;
    }

    private static SocketChannel acceptPrevious(ServerSocketChannel listener, int prev,
            byte[] token, long deadline) throws IOException {
        while (true) {
            listener.socket().setSoTimeout(millisUntil(deadline));
            SocketChannel channel;
            try {
                channel = listener.socket().accept().getChannel();
            } catch (SocketTimeoutException e) {
                throw new IOException("rank " + prev + " did not connect to this rank's ring"
                        + " link in time", e);
            }
            String peer = String.valueOf(channel.getRemoteAddress());
            try {
                channel.socket().setSoTimeout(Math.toIntExact(HANDSHAKE_TIMEOUT.toMillis()));
                DataInputStream hello = new DataInputStream(channel.socket().getInputStream());
                int magic = hello.readInt();
                int peerRank = hello.readInt();
                int tokenLength = hello.readInt();
                if (magic != MAGIC || tokenLength < 0 || tokenLength > MAX_TOKEN_BYTES) {
                    throw new IOException("not a ring handshake");
                }
                byte[] presented = new byte[tokenLength];
                hello.readFully(presented);
                if (!MessageDigest.isEqual(presented, token)) {
                    throw new IOException("wrong job token");
                }
                if (peerRank != prev) {
                    throw new IOException("it claims rank " + peerRank + ", expected " + prev);
                }
                channel.socket().setSoTimeout(0);
                return channel;
            } catch (IOException e) {
                logger.warn("Refused a ring connection from {}: {}", peer, e.getMessage());
                closeQuietly(channel);
            }
        }
    }

    private static void configure(SocketChannel channel, int socketBufferBytes)
            throws IOException {
        channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
        if (socketBufferBytes > 0) {
            channel.setOption(StandardSocketOptions.SO_SNDBUF, socketBufferBytes);
            channel.setOption(StandardSocketOptions.SO_RCVBUF, socketBufferBytes);
        }
    }

    private static int millisUntil(long deadline) {
        long millis = (deadline - System.nanoTime()) / 1_000_000;
        return (int) Math.max(1, Math.min(millis, Integer.MAX_VALUE));
    }

    int rank() {
        return rank;
    }

    int size() {
        return size;
    }

    int next() {
        return (rank + 1) % size;
    }

    int prev() {
        return (rank + size - 1) % size;
    }

    /**
     * Sends {@code send} to the next rank while receiving from the previous one into {@code
     * receive}, then into each buffer {@code inbound} returns, until it returns null.
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
     * Receives {@code data} from the previous rank and passes each byte on to the next rank as
     * soon as it has arrived, so a broadcast flows through every rank at once.
     */
    void relay(ByteBuffer data) throws PeerFailure {
        pump(data.duplicate(), data.duplicate(), full -> null, true);
    }

    private void pump(ByteBuffer send, ByteBuffer receive, Inbound inbound, boolean relay)
            throws PeerFailure {
        int sendEnd = send == null ? 0 : send.limit();
        while (true) {
            if (relay) {
                send.limit(receive == null ? sendEnd : receive.position());
            }
            boolean sending = send != null && send.hasRemaining();
            if (!sending && receive == null) {
                return;
            }
            boolean progress = false;
            if (sending) {
                progress = write(send) > 0;
            }
            if (receive != null) {
                progress |= read(receive) > 0;
                if (!receive.hasRemaining()) {
                    receive = inbound.filled(receive);
                    progress = true;
                }
            }
            if (!progress) {
                awaitReady(sending, receive != null);
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
            throw new PeerFailure(prev(), "rank " + prev() + " closed its link to rank " + rank
                    + " mid-collective (its process exited, was killed or gave up)", null);
        }
        return n;
    }

    private PeerFailure linkFailure(int peer, String what, IOException e) {
        if (e instanceof ClosedChannelException) {
            return new PeerFailure(rank, "the process group on rank " + rank + " was closed", e);
        }
        return new PeerFailure(peer, what + " (" + e.getMessage() + "): rank " + peer
                + " exited, was killed or is unreachable", e);
    }

    private void awaitReady(boolean sending, boolean receiving) throws PeerFailure {
        try {
            sendKey.interestOps(sending ? SelectionKey.OP_WRITE : 0);
            receiveKey.interestOps(receiving ? SelectionKey.OP_READ : 0);
            int ready = selector.select(timeoutMillis);
            selector.selectedKeys().clear();
            if (ready > 0) {
                return;
            }
        } catch (IOException | RuntimeException e) {
            // A closed selector or cancelled key: the group is shutting down.
            throw new PeerFailure(rank, "the process group on rank " + rank + " was closed", e);
        }
        if (!selector.isOpen()) {
            throw new PeerFailure(rank, "the process group on rank " + rank + " was closed", null);
        }
        if (receiving) {
            throw new PeerFailure(prev(), "rank " + prev() + " sent nothing to rank " + rank
                    + " for " + timeout + " (it hangs, or is not calling the same collectives)",
                    null);
        }
        throw new PeerFailure(next(), "rank " + next() + " read nothing from rank " + rank
                + " for " + timeout + " (it hangs, or is not calling the same collectives)", null);
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

    private static void closeQuietly(AutoCloseable closeable) {
        if (closeable != null) {
            try {
                closeable.close();
            } catch (Exception e) {
                logger.debug("Closing a ring link failed", e);
            }
        }
    }
}
