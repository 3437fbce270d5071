package ai.djl.fsdp.rendezvous;

import ai.djl.fsdp.rendezvous.StoreProtocol.MalformedFrameException;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The store's server, hosted by rank 0: a key-value map behind a TCP port, one thread per
 * connection (a job has few ranks, and each rank's client makes one request at a time).
 *
 * <p>A connection must present the job's run id and token in a hello frame no longer than the token
 * allows, within the handshake timeout counted from the accept (not per read, so a client trickling
 * bytes is cut off too); anything else (a wrong token, another job's run id, a stray protocol, an
 * oversized or truncated frame) is logged and disconnected, and the job goes on. At most {@value
 * #MAX_PENDING_HANDSHAKES} connections may be in their handshake and {@value #MAX_CONNECTIONS} open
 * in all; a connection beyond either is closed at once, before any thread or buffer exists for it,
 * so a flood of strangers costs a bounded amount of memory.
 */
final class TcpStoreServer implements AutoCloseable {

    private static final Logger logger = LoggerFactory.getLogger(TcpStoreServer.class);

    /** The most connections served at once: every rank holds two (its client and its watchdog). */
    private static final int MAX_CONNECTIONS = 4096;

    /** The most connections that have not yet presented the token. */
    private static final int MAX_PENDING_HANDSHAKES = 64;

    private final ServerSocket serverSocket;
    private final byte[] token;
    private final byte[] runId;
    private final Duration handshakeTimeout;
    private final Set<Socket> connections = ConcurrentHashMap.newKeySet();
    private final AtomicInteger pendingHandshakes = new AtomicInteger();
    private final ScheduledExecutorService handshakeDeadlines;
    private final StoreValues values = new StoreValues();
    private volatile boolean closed;

    private TcpStoreServer(
            ServerSocket serverSocket, byte[] token, byte[] runId, Duration handshakeTimeout) {
        this.serverSocket = serverSocket;
        this.token = token;
        this.runId = runId;
        this.handshakeTimeout = handshakeTimeout;
        handshakeDeadlines =
                Executors.newSingleThreadScheduledExecutor(
                        task -> {
                            Thread thread = new Thread(task, "djl-fsdp-store-deadlines");
                            thread.setDaemon(true);
                            return thread;
                        });
    }

    /**
     * Listens on {@code port} (0: any free port) of {@code host} when that is this machine's
     * address, otherwise on every interface (a Kubernetes service name resolves to a virtual
     * address that no local interface holds).
     */
    static TcpStoreServer start(
            String host, int port, byte[] token, byte[] runId, Duration handshakeTimeout)
            throws IOException {
        ServerSocket socket = new ServerSocket();
        try {
            socket.setReuseAddress(true);
            socket.bind(new InetSocketAddress(bindAddress(host), port), 128);
        } catch (IOException e) {
            socket.close();
            throw new IOException(
                    "rank 0 could not host the store on port "
                            + port
                            + " ("
                            + e.getMessage()
                            + "): the port is in use, most likely by another job; give each job"
                            + " its own MASTER_PORT (bin/fsdp launch picks a free one when"
                            + " --master-port is not given)",
                    e);
        }
        TcpStoreServer server = new TcpStoreServer(socket, token, runId, handshakeTimeout);
        Thread acceptor = new Thread(server::acceptLoop, "djl-fsdp-store-server");
        acceptor.setDaemon(true);
        acceptor.start();
        return server;
    }

    private static InetAddress bindAddress(String host) {
        try {
            InetAddress address = InetAddress.getByName(host);
            if (address.isLoopbackAddress() || NetworkInterface.getByInetAddress(address) != null) {
                return address;
            }
        } catch (IOException e) {
            logger.debug("Cannot resolve {} locally, listening on every interface", host, e);
        }
        return null; // the wildcard address
    }

    int port() {
        return serverSocket.getLocalPort();
    }

    private void acceptLoop() {
        while (!closed) {
            Socket socket;
            try {
                socket = serverSocket.accept();
            } catch (IOException e) {
                if (!closed) {
                    logger.warn("The store stopped accepting connections", e);
                }
                return;
            }
            boolean full = connections.size() >= MAX_CONNECTIONS;
            if (full || pendingHandshakes.incrementAndGet() > MAX_PENDING_HANDSHAKES) {
                if (!full) {
                    pendingHandshakes.decrementAndGet();
                }
                logger.warn(
                        "Refused store client {}: too many connections ({} open)",
                        socket.getRemoteSocketAddress(),
                        connections.size());
                closeQuietly(socket);
                continue;
            }
            connections.add(socket);
            // Counted from the accept, not per read: closing the socket ends any handshake.
            ScheduledFuture<?> deadline =
                    handshakeDeadlines.schedule(
                            () -> closeQuietly(socket),
                            handshakeTimeout.toMillis(),
                            TimeUnit.MILLISECONDS);
            Thread handler =
                    new Thread(
                            () -> serve(socket, deadline),
                            "djl-fsdp-store-conn-" + socket.getRemoteSocketAddress());
            handler.setDaemon(true);
            handler.start();
        }
    }

    private void serve(Socket socket, ScheduledFuture<?> deadline) {
        String peer = String.valueOf(socket.getRemoteSocketAddress());
        boolean pending = true;
        try (socket) {
            if (closed) {
                // Accepted while closing; close() set the flag before closing the connections.
                return;
            }
            socket.setTcpNoDelay(true);
            DataInputStream in =
                    new DataInputStream(new BufferedInputStream(socket.getInputStream(), 512));
            DataOutputStream out =
                    new DataOutputStream(new BufferedOutputStream(socket.getOutputStream(), 512));
            socket.setSoTimeout(Math.toIntExact(handshakeTimeout.toMillis()));
            boolean admitted = admit(in, out, peer);
            pending = false;
            pendingHandshakes.decrementAndGet();
            if (!admitted || !deadline.cancel(false)) {
                return;
            }
            // A rank may stay quiet for as long as its training step lasts.
            socket.setSoTimeout(0);
            while (!closed) {
                DataInputStream request;
                try {
                    request = StoreProtocol.readFrame(in);
                } catch (EOFException e) {
                    return; // the client closed its store
                }
                handle(request, out);
            }
        } catch (MalformedFrameException e) {
            logger.warn("Dropped store client {}: {}", peer, e.getMessage());
        } catch (EOFException e) {
            logger.warn("Dropped store client {}: the frame was cut short", peer);
        } catch (IOException e) {
            if (!closed) {
                logger.debug("Store client {} disconnected", peer, e);
            }
        } finally {
            if (pending) {
                pendingHandshakes.decrementAndGet();
            }
            deadline.cancel(false);
            connections.remove(socket);
        }
    }

    private boolean admit(DataInputStream in, DataOutputStream out, String peer)
            throws IOException {
        DataInputStream hello =
                StoreProtocol.readFrame(in, StoreProtocol.maxHelloBytes(token.length));
        StoreProtocol.require(
                hello.readInt() == StoreProtocol.MAGIC, "the first frame is not a store hello");
        byte version = hello.readByte();
        StoreProtocol.require(
                version == StoreProtocol.VERSION,
                "protocol version " + version + ", expected " + StoreProtocol.VERSION);
        int runIdLength = hello.readUnsignedByte();
        StoreProtocol.require(
                runIdLength <= StoreProtocol.MAX_RUN_ID_BYTES && runIdLength <= hello.available(),
                "a run id of " + runIdLength + " bytes");
        byte[] presentedRunId = new byte[runIdLength];
        hello.readFully(presentedRunId);
        byte[] presented = hello.readAllBytes();
        // Constant time, so the reply's timing says nothing about how much of the token matched.
        if (!MessageDigest.isEqual(presented, token)) {
            logger.warn("Refused store client {}: wrong job token", peer);
            StoreProtocol.writeFrame(out, o -> o.writeByte(StoreProtocol.STATUS_REFUSED));
            return false;
        }
        if (!MessageDigest.isEqual(presentedRunId, runId)) {
            logger.warn(
                    "Refused store client {}: it belongs to run '{}', this store to run '{}'",
                    peer,
                    new String(presentedRunId, StandardCharsets.UTF_8),
                    new String(runId, StandardCharsets.UTF_8));
            StoreProtocol.writeFrame(
                    out,
                    o -> {
                        o.writeByte(StoreProtocol.STATUS_OTHER_RUN);
                        o.writeUTF(new String(runId, StandardCharsets.UTF_8));
                    });
            return false;
        }
        StoreProtocol.writeFrame(out, o -> o.writeByte(StoreProtocol.STATUS_OK));
        return true;
    }

    private void handle(DataInputStream request, DataOutputStream out) throws IOException {
        byte op = request.readByte();
        switch (op) {
            case StoreProtocol.OP_SET:
                values.set(request.readUTF(), readValue(request));
                StoreProtocol.writeFrame(out, o -> o.writeByte(StoreProtocol.STATUS_OK));
                break;
            case StoreProtocol.OP_GET:
                String key = request.readUTF();
                byte[] value = values.awaitValue(key, readWait(request));
                StoreProtocol.writeFrame(
                        out,
                        o -> {
                            if (value == null) {
                                o.writeByte(StoreProtocol.STATUS_TIMEOUT);
                            } else {
                                o.writeByte(StoreProtocol.STATUS_OK);
                                o.writeInt(value.length);
                                o.write(value);
                            }
                        });
                break;
            case StoreProtocol.OP_ADD:
                String counter = request.readUTF();
                long delta = request.readLong();
                StoreProtocol.writeFrame(
                        out,
                        o -> {
                            try {
                                long sum = values.add(counter, delta);
                                o.writeByte(StoreProtocol.STATUS_OK);
                                o.writeLong(sum);
                            } catch (NumberFormatException e) {
                                o.writeByte(StoreProtocol.STATUS_ERROR);
                                o.writeUTF("the value under '" + counter + "' is not a counter");
                            }
                        });
                break;
            case StoreProtocol.OP_WAIT:
                int count = request.readInt();
                StoreProtocol.require(
                        count >= 0 && count <= StoreProtocol.MAX_FRAME_BYTES / 2,
                        "wait for " + count + " keys");
                List<String> keys = new ArrayList<>(count);
                for (int i = 0; i < count; i++) {
                    keys.add(request.readUTF());
                }
                List<String> missing = values.awaitKeys(keys, readWait(request));
                StoreProtocol.writeFrame(
                        out,
                        o -> {
                            o.writeByte(
                                    missing.isEmpty()
                                            ? StoreProtocol.STATUS_OK
                                            : StoreProtocol.STATUS_TIMEOUT);
                            o.writeInt(missing.size());
                            for (String k : missing) {
                                o.writeUTF(k);
                            }
                        });
                break;
            default:
                throw new MalformedFrameException("unknown store operation " + op);
        }
        StoreProtocol.require(request.available() == 0, "trailing bytes after operation " + op);
    }

    private static byte[] readValue(DataInputStream request) throws IOException {
        int length = request.readInt();
        StoreProtocol.require(
                length >= 0 && length <= request.available(),
                "value length " + length + " does not fit its frame");
        byte[] value = new byte[length];
        request.readFully(value);
        return value;
    }

    private static long readWait(DataInputStream request) throws IOException {
        long millis = request.readLong();
        StoreProtocol.require(millis >= 0, "negative wait " + millis);
        return millis;
    }

    private static void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException e) {
            logger.debug("Closing a store connection failed", e);
        }
    }

    @Override
    public void close() {
        closed = true;
        handshakeDeadlines.shutdownNow();
        try {
            serverSocket.close();
        } catch (IOException e) {
            logger.debug("Closing the store's listening socket failed", e);
        }
        connections.forEach(TcpStoreServer::closeQuietly);
        values.close();
    }
}
