package ai.djl.fsdp.rendezvous;

import java.io.DataInputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The job's {@link Store} over TCP: rank 0 hosts the server at {@code MASTER_ADDR:MASTER_PORT}, and
 * every rank (rank 0 too) is a client with one connection.
 *
 * <p>A client keeps trying to connect until its timeout, since rank 0 may start after the others.
 * Every client presents the job token; the server refuses and disconnects any other. Calls from
 * several threads are serialised over the one connection.
 */
public final class TcpStore implements Store {

    private final TcpStoreServer server;
    private final Builder settings;
    private final TcpStoreConnection connection;
    private final Duration timeout;
    private final String endpoint;
    private final StoreBarrier barriers = new StoreBarrier();

    private TcpStore(TcpStoreServer server, Builder settings, TcpStoreConnection connection) {
        this.server = server;
        this.settings = settings;
        this.connection = connection;
        this.timeout = settings.timeout;
        this.endpoint = connection.getEndpoint();
    }

    /**
     * Returns a builder for a store client of the server at {@code host:port}.
     *
     * @param host rank 0's host ({@code MASTER_ADDR})
     * @param port the store's port ({@code MASTER_PORT}); 0 only when this process hosts it
     */
    public static Builder builder(String host, int port) {
        return new Builder(host, port);
    }

    /** Returns the port the store listens on (the chosen one when built with port 0). */
    public int getPort() {
        return connection.getPort();
    }

    /**
     * Returns this machine's address on the route to the store host: the address other ranks can
     * reach this process at.
     */
    public InetAddress getLocalAddress() {
        return connection.getLocalAddress();
    }

    @Override
    public Duration getTimeout() {
        return timeout;
    }

    @Override
    public TcpStore newClient(Duration timeout) {
        return new Builder(settings.host, getPort())
                .optToken(settings.token)
                .optRunId(settings.runId)
                .optTimeout(timeout)
                .build();
    }

    @Override
    public void set(String key, byte[] value) {
        Objects.requireNonNull(value, "value");
        connection.call(
                key(key),
                Duration.ZERO,
                o -> {
                    o.writeByte(StoreProtocol.OP_SET);
                    o.writeUTF(key);
                    o.writeInt(value.length);
                    o.write(value);
                });
    }

    @Override
    public byte[] get(String key, Duration wait) {
        DataInputStream reply =
                connection.call(
                        key(key),
                        wait,
                        o -> {
                            o.writeByte(StoreProtocol.OP_GET);
                            o.writeUTF(key);
                            o.writeLong(wait.toMillis());
                        });
        try {
            if (reply.readByte() == StoreProtocol.STATUS_TIMEOUT) {
                throw new StoreTimeoutException(
                        "No rank set store key '"
                                + key
                                + "' within "
                                + wait
                                + " (store at "
                                + endpoint
                                + ")");
            }
            byte[] value = new byte[reply.readInt()];
            reply.readFully(value);
            return value;
        } catch (IOException e) {
            throw connection.brokenReply(e);
        }
    }

    @Override
    public long add(String key, long delta) {
        DataInputStream reply =
                connection.call(
                        key(key),
                        Duration.ZERO,
                        o -> {
                            o.writeByte(StoreProtocol.OP_ADD);
                            o.writeUTF(key);
                            o.writeLong(delta);
                        });
        try {
            if (reply.readByte() != StoreProtocol.STATUS_OK) {
                throw new StoreException(reply.readUTF());
            }
            return reply.readLong();
        } catch (IOException e) {
            throw connection.brokenReply(e);
        }
    }

    @Override
    public void waitFor(Iterable<String> keys) {
        List<String> missing = missingAfterWait(keys, timeout);
        if (!missing.isEmpty()) {
            throw new StoreTimeoutException(
                    "Store keys "
                            + missing
                            + " were not set within "
                            + timeout
                            + " (store at "
                            + endpoint
                            + ")");
        }
    }

    @Override
    public void barrier(String name, int rank, int worldSize) {
        barriers.await(this, this::missingAfterWait, name, rank, worldSize, timeout);
    }

    private List<String> missingAfterWait(Iterable<String> keys, Duration wait) {
        List<String> all = new ArrayList<>();
        keys.forEach(k -> all.add(key(k)));
        DataInputStream reply =
                connection.call(
                        "a wait for " + all.size() + " keys",
                        wait,
                        o -> {
                            o.writeByte(StoreProtocol.OP_WAIT);
                            o.writeInt(all.size());
                            for (String key : all) {
                                o.writeUTF(key);
                            }
                            o.writeLong(wait.toMillis());
                        });
        try {
            reply.readByte();
            int count = reply.readInt();
            List<String> missing = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                missing.add(reply.readUTF());
            }
            return missing;
        } catch (IOException e) {
            throw connection.brokenReply(e);
        }
    }

    private static String key(String key) {
        Objects.requireNonNull(key, "key");
        if (key.getBytes(StandardCharsets.UTF_8).length > 0xFFFF) {
            throw new IllegalArgumentException("store keys are limited to 65535 bytes");
        }
        return key;
    }

    @Override
    public void close() {
        connection.close();
        if (server != null) {
            server.close();
        }
    }

    /** Builds a {@link TcpStore}; see {@link TcpStore#builder}. */
    public static final class Builder {
        private final String host;
        private final int port;
        private boolean hostServer;
        private Duration timeout = Duration.ofMinutes(5);
        private String token = "";
        private String runId = "";

        Builder(String host, int port) {
            this.host = Objects.requireNonNull(host, "host");
            this.port = port;
        }

        /** Makes this process host the server too (rank 0 does); the default is false. */
        public Builder optHostServer(boolean hostServer) {
            this.hostServer = hostServer;
            return this;
        }

        /** Sets the longest any call (connecting included) waits; the default is 5 minutes. */
        public Builder optTimeout(Duration timeout) {
            this.timeout = StoreConnector.requirePositive(timeout);
            return this;
        }

        /** Sets the job token every client must present; the default is empty. */
        public Builder optToken(String token) {
            this.token = Objects.requireNonNull(token, "token");
            return this;
        }

        /**
         * Sets the id of this run of the job (default empty), which a launcher generates afresh
         * each time it starts the ranks: the server refuses clients of another run, so two jobs
         * given the same port and token cannot join each other's store.
         *
         * @throws IllegalArgumentException if it is longer than 64 bytes
         */
        public Builder optRunId(String runId) {
            if (runId.getBytes(StandardCharsets.UTF_8).length > StoreProtocol.MAX_RUN_ID_BYTES) {
                throw new IllegalArgumentException(
                        "the run id is limited to " + StoreProtocol.MAX_RUN_ID_BYTES + " bytes");
            }
            this.runId = runId;
            return this;
        }

        /**
         * Starts the server if this process hosts it, then connects, retrying until the timeout.
         *
         * @throws StoreException if the store cannot be reached in time or refuses the token
         */
        public TcpStore build() {
            if (port == 0 && !hostServer) {
                throw new IllegalArgumentException(
                        "port 0 means 'any free port' and only works in the process hosting the"
                                + " store");
            }
            byte[] tokenBytes = token.getBytes(StandardCharsets.UTF_8);
            byte[] runIdBytes = runId.getBytes(StandardCharsets.UTF_8);
            TcpStoreServer server = null;
            try {
                int connectPort = port;
                if (hostServer) {
                    server =
                            TcpStoreServer.start(
                                    host, port, tokenBytes, runIdBytes, handshakeTimeout());
                    connectPort = server.port();
                }
                return new TcpStore(
                        server,
                        this,
                        TcpStoreConnection.open(
                                host, connectPort, tokenBytes, runIdBytes, timeout));
            } catch (IOException | RuntimeException e) {
                if (server != null) {
                    server.close();
                }
                if (e instanceof StoreException) {
                    throw (StoreException) e;
                }
                throw new StoreException(e.getMessage(), e);
            }
        }

        private Duration handshakeTimeout() {
            return timeout.compareTo(Duration.ofSeconds(30)) < 0 ? timeout : Duration.ofSeconds(30);
        }
    }
}
