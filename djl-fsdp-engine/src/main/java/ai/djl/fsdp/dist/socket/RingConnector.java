package ai.djl.fsdp.dist.socket;

import ai.djl.fsdp.rendezvous.Store;
import java.io.IOException;
import java.lang.ref.Reference;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.StandardSocketOptions;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Forms the ring: every rank listens, publishes its address in the store, connects to the next rank
 * and accepts the previous one, refusing any connection without the job token.
 *
 * <p>A rank listens on TCP and, where it can, on a Unix domain socket in the temporary folder,
 * whose path carries a random name. A neighbour that sees that path exists is on the same machine
 * and connects through it: the same bytes without the TCP/IP stack, markedly faster on loopback.
 * Anything else (another machine, a container with its own temporary folder, a failed attempt) uses
 * TCP.
 *
 * <p>Neighbours on one machine then check whether they may read each other's memory ({@link
 * PeerMemory}); each link where the receiver can is pulled rather than streamed (see {@link Ring}).
 */
final class RingConnector {

    private static final Logger logger = LoggerFactory.getLogger(RingConnector.class);

    /** "DJLR": the first bytes of a ring handshake. */
    private static final int MAGIC = 0x444A4C52;

    private static final int MAX_TOKEN_BYTES = 4096;
    private static final Duration HANDSHAKE_TIMEOUT = Duration.ofSeconds(10);
    private static final int PROBE_BYTES = 32;
    private static final byte[] NO_PROBE = "none".getBytes(StandardCharsets.UTF_8);

    private RingConnector() {}

    /**
     * Connects this rank into the ring of {@code size} ranks and returns once every rank has.
     *
     * @param keyPrefix the ring's own store keys: empty for the job's ring, a subgroup's prefix
     * @param rank this rank's place in the ring
     * @param jobRanks the job rank at each place of the ring, which messages name
     * @param localAddress the address of this machine that the other ranks can reach
     * @param socketBufferBytes the socket buffer size to ask for; 0 leaves it to the system
     */
    static Ring connect(
            Store store,
            String keyPrefix,
            int rank,
            int[] jobRanks,
            byte[] token,
            InetAddress localAddress,
            Duration timeout,
            Duration collectiveTimeout,
            int socketBufferBytes,
            boolean peerCopy)
            throws IOException {
        int size = jobRanks.length;
        int next = (rank + 1) % size;
        int prev = (rank + size - 1) % size;
        long deadline = System.nanoTime() + timeout.toNanos();
        List<ServerSocketChannel> listeners = new ArrayList<>();
        Path socketFolder = null;
        SocketChannel toNext = null;
        SocketChannel fromPrev = null;
        try {
            ServerSocketChannel tcp = ServerSocketChannel.open();
            listeners.add(tcp);
            if (socketBufferBytes > 0) {
                // Set before listening so that accepted sockets scale their window to it.
                tcp.setOption(StandardSocketOptions.SO_RCVBUF, socketBufferBytes);
            }
            tcp.bind(new InetSocketAddress(localAddress, 0));
            String address = localAddress.getHostAddress() + ' ' + tcp.socket().getLocalPort();
            socketFolder = unixSocketFolder();
            Path path = listenUnix(socketFolder, listeners);
            if (path != null) {
                address += ' ' + path.toString();
            }
            store.set(keyPrefix + addressKey(rank), address.getBytes(StandardCharsets.UTF_8));
            ByteBuffer probe =
                    peerCopy && PeerMemory.available()
                            ? publishProbe(store, keyPrefix, rank)
                            : null;
            if (probe == null) {
                store.set(keyPrefix + probeKey(rank), NO_PROBE);
            }

            String nextAddress =
                    new String(store.get(keyPrefix + addressKey(next)), StandardCharsets.UTF_8);
            toNext = connect(nextAddress.split(" "), deadline);
            configure(toNext, socketBufferBytes);
            sendHello(toNext, rank, token);
            fromPrev = acceptPrevious(listeners, prev, jobRanks[prev], token, deadline);
            configure(fromPrev, socketBufferBytes);

            boolean prevIsLocal = fromPrev.getLocalAddress() instanceof UnixDomainSocketAddress;
            long prevPid =
                    probe != null && prevIsLocal
                            ? probePrevious(store, keyPrefix, prev, jobRanks[prev])
                            : -1;
            store.set(
                    keyPrefix + pullKey(rank),
                    Long.toString(prevPid).getBytes(StandardCharsets.UTF_8));
            boolean nextPulls =
                    Long.parseLong(
                                    new String(
                                            store.get(keyPrefix + pullKey(next)),
                                            StandardCharsets.UTF_8))
                            >= 0;
            // The next rank reads the probe until it has decided; keep it alive until all have.
            store.barrier(keyPrefix + "socket-ring", rank, size);
            Reference.reachabilityFence(probe);
            Ring ring =
                    new Ring(
                            rank,
                            size,
                            jobRanks,
                            toNext,
                            fromPrev,
                            prevPid,
                            nextPulls,
                            collectiveTimeout);
            logger.debug("Rank {} ring links: {}", jobRanks[rank], ring.describeLinks());
            return ring;
        } catch (IOException | RuntimeException e) {
            Ring.closeQuietly(toNext);
            Ring.closeQuietly(fromPrev);
            throw e;
        } finally {
            listeners.forEach(Ring::closeQuietly);
            deleteQuietly(socketFolder);
        }
    }

    private static String addressKey(int rank) {
        return "socket-ring/address/" + rank;
    }

    private static String probeKey(int rank) {
        return "socket-ring/probe/" + rank;
    }

    private static String pullKey(int rank) {
        return "socket-ring/pull-pid/" + rank;
    }

    /**
     * Fills a buffer with random bytes and publishes this process's id, the buffer's address and
     * the bytes, so that the next rank can check that it may read this process's memory.
     */
    private static ByteBuffer publishProbe(Store store, String keyPrefix, int rank) {
        byte[] secret = new byte[PROBE_BYTES];
        new SecureRandom().nextBytes(secret);
        ByteBuffer probe = ByteBuffer.allocateDirect(PROBE_BYTES);
        probe.put(secret).flip();
        String description =
                ProcessHandle.current().pid()
                        + " "
                        + PeerMemory.address(probe)
                        + ' '
                        + Base64.getEncoder().encodeToString(secret);
        store.set(keyPrefix + probeKey(rank), description.getBytes(StandardCharsets.UTF_8));
        return probe;
    }

    /** Returns the previous rank's process id if its memory can be read from here, else -1. */
    private static long probePrevious(Store store, String keyPrefix, int prev, int prevJobRank) {
        String description =
                new String(store.get(keyPrefix + probeKey(prev)), StandardCharsets.UTF_8);
        if (description.equals(new String(NO_PROBE, StandardCharsets.UTF_8))) {
            return -1;
        }
        String[] parts = description.split(" ");
        long pid = Long.parseLong(parts[0]);
        byte[] expected = Base64.getDecoder().decode(parts[2]);
        ByteBuffer copy = ByteBuffer.allocateDirect(expected.length);
        try {
            PeerMemory.read(pid, Long.parseLong(parts[1]), copy, expected.length);
        } catch (IOException e) {
            logger.info("Rank {} streams through its socket: {}", prevJobRank, e.getMessage());
            return -1;
        }
        byte[] actual = new byte[expected.length];
        copy.flip().get(actual);
        // Equal bytes prove it is the right process (a reused pid would not hold them).
        return Arrays.equals(actual, expected) ? pid : -1;
    }

    /** Returns a fresh private folder for this rank's Unix socket, or null where there is none. */
    private static Path unixSocketFolder() {
        try {
            return Files.createTempDirectory(
                    "djl-fsdp-" + UUID.randomUUID().toString().substring(0, 8));
        } catch (IOException | UnsupportedOperationException e) {
            logger.debug("No Unix domain socket for the ring; TCP only", e);
            return null;
        }
    }

    /**
     * Listens on {@code folder}'s Unix domain socket and returns its path, or returns null (TCP
     * only) where there is no folder, its path holds a space (the published address is
     * space-separated) or the socket cannot be bound (a temporary folder's path past the system's
     * limit of about 107 bytes).
     */
    private static Path listenUnix(Path folder, List<ServerSocketChannel> listeners) {
        if (folder == null) {
            return null;
        }
        Path path = folder.resolve("ring.sock");
        if (path.toString().indexOf(' ') >= 0) {
            logger.debug("No Unix domain socket for the ring at {} (a space); TCP only", path);
            return null;
        }
        ServerSocketChannel unix = null;
        try {
            unix = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
            unix.bind(UnixDomainSocketAddress.of(path));
            listeners.add(unix);
            return path;
        } catch (IOException | UnsupportedOperationException e) {
            Ring.closeQuietly(unix);
            logger.debug("No Unix domain socket for the ring at {}; TCP only", path, e);
            return null;
        }
    }

    private static void deleteQuietly(Path folder) {
        if (folder == null) {
            return;
        }
        try {
            Files.deleteIfExists(folder.resolve("ring.sock"));
            Files.deleteIfExists(folder);
        } catch (IOException e) {
            logger.debug("Could not delete {}", folder, e);
        }
    }

    /** Connects to {@code host port [unix-path]}, through the Unix socket when it is here. */
    private static SocketChannel connect(String[] address, long deadline) throws IOException {
        if (address.length > 2 && Files.exists(Path.of(address[2]))) {
            SocketChannel unix = SocketChannel.open(StandardProtocolFamily.UNIX);
            try {
                unix.connect(UnixDomainSocketAddress.of(address[2]));
                return unix;
            } catch (IOException e) {
                Ring.closeQuietly(unix);
                logger.debug("Unix socket {} refused; using TCP", address[2], e);
            }
        }
        SocketChannel tcp = SocketChannel.open();
        try {
            tcp.socket()
                    .connect(
                            new InetSocketAddress(address[0], Integer.parseInt(address[1])),
                            millisUntil(deadline));
            return tcp;
        } catch (IOException e) {
            Ring.closeQuietly(tcp);
            throw e;
        }
    }

    private static void configure(SocketChannel channel, int socketBufferBytes) throws IOException {
        if (channel.getRemoteAddress() instanceof InetSocketAddress) {
            channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
        }
        if (socketBufferBytes > 0) {
            channel.setOption(StandardSocketOptions.SO_SNDBUF, socketBufferBytes);
            channel.setOption(StandardSocketOptions.SO_RCVBUF, socketBufferBytes);
        }
    }

    private static void sendHello(SocketChannel channel, int rank, byte[] token)
            throws IOException {
        ByteBuffer hello = ByteBuffer.allocate(12 + token.length);
        hello.putInt(MAGIC).putInt(rank).putInt(token.length).put(token).flip();
        while (hello.hasRemaining()) {
            channel.write(hello); // blocking: returns once all is written
        }
    }

    private static SocketChannel acceptPrevious(
            List<ServerSocketChannel> listeners,
            int prev,
            int prevJobRank,
            byte[] token,
            long deadline)
            throws IOException {
        try (Selector selector = Selector.open()) {
            for (ServerSocketChannel listener : listeners) {
                listener.configureBlocking(false);
                listener.register(selector, SelectionKey.OP_ACCEPT);
            }
            while (System.nanoTime() < deadline) {
                selector.select(millisUntil(deadline));
                for (SelectionKey key : selector.selectedKeys()) {
                    SocketChannel channel = ((ServerSocketChannel) key.channel()).accept();
                    if (channel == null) {
                        continue;
                    }
                    String refusal = checkHello(channel, prev, token);
                    if (refusal == null) {
                        return channel;
                    }
                    logger.warn(
                            "Refused a ring connection from {}: {}",
                            channel.getRemoteAddress(),
                            refusal);
                    Ring.closeQuietly(channel);
                }
                selector.selectedKeys().clear();
            }
        }
        throw new IOException(
                "rank " + prevJobRank + " did not connect to this rank's ring link in time");
    }

    /** Returns why the connection's handshake is refused, or null when it is rank {@code prev}. */
    private static String checkHello(SocketChannel channel, int prev, byte[] token) {
        long deadline = System.nanoTime() + HANDSHAKE_TIMEOUT.toNanos();
        try {
            ByteBuffer header = ByteBuffer.allocate(12);
            readFully(channel, header, deadline);
            int magic = header.getInt();
            int peerRank = header.getInt();
            int tokenLength = header.getInt();
            if (magic != MAGIC || tokenLength < 0 || tokenLength > MAX_TOKEN_BYTES) {
                return "not a ring handshake";
            }
            ByteBuffer presented = ByteBuffer.allocate(tokenLength);
            readFully(channel, presented, deadline);
            // Constant time, so timing reveals nothing about how much of the token matched.
            if (!MessageDigest.isEqual(presented.array(), token)) {
                return "wrong job token";
            }
            if (peerRank != prev) {
                return "it claims rank " + peerRank + ", expected " + prev;
            }
            return null;
        } catch (IOException e) {
            return e.getMessage();
        }
    }

    /** Reads until {@code buffer} is full, failing at {@code deadline}; then flips it. */
    private static void readFully(SocketChannel channel, ByteBuffer buffer, long deadline)
            throws IOException {
        channel.configureBlocking(false);
        try (Selector selector = Selector.open()) {
            channel.register(selector, SelectionKey.OP_READ);
            while (buffer.hasRemaining()) {
                if (channel.read(buffer) < 0) {
                    throw new IOException("closed during the handshake");
                }
                if (buffer.hasRemaining()) {
                    if (System.nanoTime() >= deadline) {
                        throw new IOException("handshake timed out");
                    }
                    selector.select(millisUntil(deadline));
                    selector.selectedKeys().clear();
                }
            }
        }
        buffer.flip();
    }

    private static int millisUntil(long deadline) {
        long millis = (deadline - System.nanoTime()) / 1_000_000;
        return (int) Math.max(1, Math.min(millis, Integer.MAX_VALUE));
    }
}
