package ai.djl.fsdp.rendezvous;

import ai.djl.fsdp.rendezvous.TorchStoreWire.Dialect;
import ai.djl.fsdp.rendezvous.TorchStoreWire.Request;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The job's {@link Store} in a PyTorch TCPStore that someone else hosts: the store torchrun's agent
 * (also Kubeflow's PyTorchJob and {@code accelerate launch}) keeps at {@code MASTER_ADDR:
 * MASTER_PORT} and announces with {@code TORCHELASTIC_USE_AGENT_STORE=True}. This class is a client
 * of PyTorch's wire protocol ({@link TorchStoreWire}), in either dialect, found on the first
 * connection.
 *
 * <p>Every key is put under a prefix (the job's run id and restart attempt), since the agents and
 * every restart share the store. A wait that times out leaves the server waiting on the
 * connection's behalf, so the client then reconnects; a call that gets no answer within the timeout
 * means the store's host is stopped or unreachable.
 */
public final class TorchStore implements Store {

    private static final Logger logger = LoggerFactory.getLogger(TorchStore.class);

    private static final Duration PROBE_WINDOW = Duration.ofSeconds(1);

    private final Builder settings;
    private final Dialect dialect;
    private final StoreBarrier barriers = new StoreBarrier();
    private Socket socket;
    private DataInputStream in;
    private OutputStream out;

    private TorchStore(Builder settings, Dialect dialect) {
        this.settings = settings;
        this.dialect = dialect;
        connect();
    }

    /**
     * Returns a builder for a client of the PyTorch TCPStore at {@code host:port}.
     *
     * @param host the store's host ({@code MASTER_ADDR})
     * @param port its port ({@code MASTER_PORT})
     */
    public static Builder builder(String host, int port) {
        return new Builder(host, port);
    }

    /** Returns the dialect the server speaks. */
    Dialect dialect() {
        return dialect;
    }

    /**
     * Returns this machine's address on the route to the store: the address other ranks can reach
     * this process at.
     */
    public synchronized InetAddress getLocalAddress() {
        return socket.getLocalAddress();
    }

    @Override
    public Duration getTimeout() {
        return settings.timeout;
    }

    @Override
    public TorchStore newClient(Duration timeout) {
        Builder copy = new Builder(settings.host, settings.port);
        copy.optKeyPrefix(settings.prefix).optTimeout(timeout);
        return new TorchStore(copy, dialect);
    }

    @Override
    public void set(String key, byte[] value) {
        Objects.requireNonNull(value, "value");
        Request request = new Request(dialect, TorchStoreWire.SET).string(key(key)).bytes(value);
        call("a set of '" + key + "'", Duration.ZERO, request, reply -> null);
    }

    @Override
    public synchronized byte[] get(String key, Duration wait) {
        boolean present = wait.isZero() ? isSet(key(key)) : awaitKeys(List.of(key(key)), wait);
        if (!present) {
            throw new StoreTimeoutException(
                    "No rank set store key '" + key + "' within " + wait + " (" + where() + ")");
        }
        Request request = new Request(dialect, TorchStoreWire.GET).string(key(key));
        return call("a get of '" + key + "'", Duration.ZERO, request, TorchStoreWire::readBytes);
    }

    @Override
    public long add(String key, long delta) {
        Request request = new Request(dialect, TorchStoreWire.ADD).string(key(key)).int64(delta);
        return call("an add to '" + key + "'", Duration.ZERO, request, TorchStoreWire::readInt64);
    }

    @Override
    public void waitFor(Iterable<String> keys) {
        List<String> all = new ArrayList<>();
        keys.forEach(all::add);
        List<String> missing = missingAfterWait(all, settings.timeout);
        if (!missing.isEmpty()) {
            throw new StoreTimeoutException(
                    "Store keys "
                            + missing
                            + " were not set within "
                            + settings.timeout
                            + " ("
                            + where()
                            + ")");
        }
    }

    @Override
    public void barrier(String name, int rank, int worldSize) {
        barriers.await(this, this::missingAfterWait, name, rank, worldSize, settings.timeout);
    }

    private synchronized List<String> missingAfterWait(List<String> keys, Duration wait) {
        List<String> prefixed = new ArrayList<>(keys.size());
        keys.forEach(k -> prefixed.add(key(k)));
        List<String> missing = new ArrayList<>();
        if (!awaitKeys(prefixed, wait)) {
            for (String key : keys) {
                if (!isSet(key(key))) {
                    missing.add(key);
                }
            }
        }
        return missing;
    }

    /** Sends {@code WAIT}; on a timeout, reconnects (the server would answer later) and says so. */
    private synchronized boolean awaitKeys(List<String> prefixedKeys, Duration wait) {
        Request request = new Request(dialect, TorchStoreWire.WAIT).int64(prefixedKeys.size());
        prefixedKeys.forEach(request::string);
        try {
            socket.setSoTimeout(StoreConnector.readTimeoutMillis(wait));
            request.send(out);
            if (TorchStoreWire.readByte(in) != TorchStoreWire.STOP_WAITING) {
                throw new StoreException("The store at " + where() + " sent a malformed reply");
            }
            return true;
        } catch (SocketTimeoutException e) {
            reconnect();
            return false;
        } catch (IOException e) {
            throw failed("a wait for " + prefixedKeys.size() + " keys", e);
        }
    }

    private boolean isSet(String prefixedKey) {
        Request request = new Request(dialect, TorchStoreWire.CHECK).int64(1).string(prefixedKey);
        return call(
                "a check of '" + prefixedKey + "'",
                Duration.ZERO,
                request,
                in -> {
                    int reply = TorchStoreWire.readByte(in);
                    return reply == TorchStoreWire.READY;
                });
    }

    private String key(String key) {
        return settings.prefix + Objects.requireNonNull(key, "key");
    }

    private String where() {
        return "PyTorch store at "
                + settings.host
                + ':'
                + settings.port
                + ", hosted by the launcher's agent";
    }

    /** A reply reader; {@code null} when the request has no reply. */
    @FunctionalInterface
    private interface Reply<T> {
        T read(DataInputStream in) throws IOException;
    }

    /**
     * Sends one request and reads its reply; a reply later than the timeout means the store's host
     * has stopped or is unreachable.
     */
    private synchronized <T> T call(String what, Duration wait, Request request, Reply<T> reply) {
        try {
            socket.setSoTimeout(StoreConnector.readTimeoutMillis(wait.plus(settings.timeout)));
            request.send(out);
            return reply.read(in);
        } catch (SocketTimeoutException e) {
            // Its late reply would answer the next call: the connection is given up.
            closeSocket();
            throw new StoreException(
                    "The "
                            + where()
                            + " did not answer a call ("
                            + what
                            + ") for "
                            + settings.timeout
                            + ": the launcher is stopped or its host is unreachable",
                    e);
        } catch (IOException e) {
            closeSocket();
            throw failed(what, e);
        }
    }

    private StoreException failed(String what, IOException e) {
        return new StoreException(
                "The "
                        + where()
                        + " failed during "
                        + what
                        + ": "
                        + e
                        + " (the launcher exited, or the store dropped this connection)",
                e);
    }

    private synchronized void reconnect() {
        closeSocket();
        connect();
    }

    /**
     * Connects, retrying until the timeout, then validates when the server expects it and checks
     * that it answers.
     */
    private synchronized void connect() {
        long deadline = System.nanoTime() + settings.timeout.toNanos();
        Socket opened = settings.open(deadline);
        try {
            socket = opened;
            in = new DataInputStream(new BufferedInputStream(opened.getInputStream()));
            out = new BufferedOutputStream(opened.getOutputStream());
            if (dialect == Dialect.VALIDATED) {
                Request.validate().send(out);
            }
        } catch (IOException e) {
            closeSocket();
            throw failed("the handshake", e);
        }
        try {
            call(
                    "the first query, in the "
                            + dialect
                            + " dialect (the server speaks another one if this fails)",
                    Duration.ZERO,
                    new Request(dialect, TorchStoreWire.GETNUMKEYS),
                    TorchStoreWire::readInt64);
        } catch (RuntimeException e) {
            closeSocket();
            throw e;
        }
    }

    private void closeSocket() {
        try {
            socket.close();
        } catch (IOException e) {
            logger.debug("Closing the store connection failed", e);
        }
    }

    @Override
    public synchronized void close() {
        closeSocket();
    }

    /** Builds a {@link TorchStore}; see {@link TorchStore#builder}. */
    public static final class Builder {
        private final String host;
        private final int port;
        private Duration timeout = Duration.ofMinutes(5);
        private String prefix = "";

        Builder(String host, int port) {
            this.host = Objects.requireNonNull(host, "host");
            if (port <= 0 || port > 65535) {
                throw new IllegalArgumentException("not a TCP port: " + port);
            }
            this.port = port;
        }

        /** Sets the longest any call (connecting included) waits; the default is 5 minutes. */
        public Builder optTimeout(Duration timeout) {
            this.timeout = StoreConnector.requirePositive(timeout);
            return this;
        }

        /** Sets the prefix of every key this client uses; the default is none. */
        public Builder optKeyPrefix(String prefix) {
            this.prefix = Objects.requireNonNull(prefix, "prefix");
            return this;
        }

        /**
         * Connects (retrying until the timeout) and finds the server's dialect.
         *
         * @throws StoreException if the store cannot be reached in time or speaks neither dialect
         */
        public TorchStore build() {
            long deadline = System.nanoTime() + timeout.toNanos();
            Dialect dialect;
            try (Socket probe = open(deadline)) {
                dialect = TorchStoreWire.probe(probe, PROBE_WINDOW);
            } catch (IOException e) {
                throw new StoreException(
                        "Could not probe the PyTorch store at " + host + ':' + port + ": " + e, e);
            }
            logger.debug("The PyTorch store at {}:{} speaks the {} dialect", host, port, dialect);
            return new TorchStore(this, dialect);
        }

        /** Opens a connection, retrying until {@code deadline} (the store may not listen yet). */
        private Socket open(long deadline) {
            return StoreConnector.connect(
                    host,
                    port,
                    deadline,
                    socket -> socket,
                    last ->
                            new StoreException(
                                    "Could not reach the PyTorch store at "
                                            + host
                                            + ':'
                                            + port
                                            + " within "
                                            + timeout
                                            + " ("
                                            + last
                                            + "). TORCHELASTIC_USE_AGENT_STORE=True says the"
                                            + " launcher (torchrun, PyTorchJob, accelerate) hosts"
                                            + " one at MASTER_ADDR:MASTER_PORT: is it still"
                                            + " running?",
                                    last));
        }
    }
}
