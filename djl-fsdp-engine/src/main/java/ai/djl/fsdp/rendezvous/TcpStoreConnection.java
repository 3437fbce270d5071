package ai.djl.fsdp.rendezvous;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One {@link TcpStore} client's connection to a {@link TcpStoreServer}: connecting (retried until
 * the timeout), the handshake that presents the job token and run id, and one request and reply
 * frame at a time, whose failures say what became of the store's host.
 */
final class TcpStoreConnection {

    private static final Logger logger = LoggerFactory.getLogger(TcpStoreConnection.class);

    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;
    private final Duration timeout;
    private final String endpoint;

    /** The failure that left a request unanswered: its late reply would answer the next one. */
    private StoreException broken;

    private TcpStoreConnection(Socket socket, Duration timeout, String endpoint)
            throws IOException {
        this.socket = socket;
        this.timeout = timeout;
        this.endpoint = endpoint;
        in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
        out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
    }

    /**
     * Connects and says hello, retrying both until the timeout: the server may not listen yet, or
     * may turn connections away while a flood of strangers fills its handshakes.
     *
     * @throws StoreException if the store cannot be reached in time or refuses the token or run
     */
    static TcpStoreConnection open(
            String host, int port, byte[] token, byte[] runId, Duration timeout) {
        String endpoint = host + ':' + port;
        return StoreConnector.connect(
                host,
                port,
                System.nanoTime() + timeout.toNanos(),
                socket -> {
                    TcpStoreConnection connection =
                            new TcpStoreConnection(socket, timeout, endpoint);
                    connection.hello(token, runId);
                    return connection;
                },
                last ->
                        new StoreException(
                                "Could not reach the store at "
                                        + endpoint
                                        + " within "
                                        + timeout
                                        + " ("
                                        + last
                                        + "). Is rank 0 running, and are"
                                        + " MASTER_ADDR and MASTER_PORT the same on every"
                                        + " rank?",
                                last));
    }

    /** Returns the store's port. */
    int getPort() {
        return socket.getPort();
    }

    /** Returns this machine's address on the route to the store host. */
    InetAddress getLocalAddress() {
        return socket.getLocalAddress();
    }

    /** Returns {@code host:port} of the store, for messages. */
    String getEndpoint() {
        return endpoint;
    }

    /**
     * Sends one request and returns the reply frame; one request at a time per connection. The
     * server answers a request at once or after the wait it was asked for, so a reply later than
     * that by the timeout means the store's host has stopped.
     */
    synchronized DataInputStream call(String what, Duration wait, StoreProtocol.FrameBody request) {
        if (broken != null) {
            throw new StoreException(
                    "The connection to the store at "
                            + endpoint
                            + " was given up after an earlier call failed; "
                            + what
                            + " cannot be sent: "
                            + broken.getMessage(),
                    broken);
        }
        try {
            socket.setSoTimeout(StoreConnector.readTimeoutMillis(wait.plus(timeout)));
            StoreProtocol.writeFrame(out, request);
            return StoreProtocol.readFrame(in);
        } catch (SocketTimeoutException e) {
            throw giveUp(
                    new StoreException(
                            "The store at "
                                    + endpoint
                                    + " did not answer a call ("
                                    + what
                                    + ") for "
                                    + timeout
                                    + ": rank 0, which hosts it, is stopped (SIGSTOP, a debugger)"
                                    + " or its host is unreachable",
                            e));
        } catch (IOException e) {
            throw giveUp(
                    new StoreException(
                            "The store at "
                                    + endpoint
                                    + " failed during "
                                    + what
                                    + ": "
                                    + e
                                    + " (rank 0 hosts it: it exited or was killed)",
                            e));
        }
    }

    /** Closes the connection after {@code failure}, which later calls repeat, and returns it. */
    private StoreException giveUp(StoreException failure) {
        broken = failure;
        close();
        return failure;
    }

    /** The error for a reply that could not be read. */
    StoreException brokenReply(IOException e) {
        return new StoreException("The store at " + endpoint + " sent a malformed reply", e);
    }

    /** Closes the connection. */
    void close() {
        try {
            socket.close();
        } catch (IOException e) {
            logger.debug("Closing the store connection failed", e);
        }
    }

    private void hello(byte[] token, byte[] runId) {
        DataInputStream reply =
                call(
                        "the handshake",
                        Duration.ZERO,
                        o -> {
                            o.writeInt(StoreProtocol.MAGIC);
                            o.writeByte(StoreProtocol.VERSION);
                            o.writeByte(runId.length);
                            o.write(runId);
                            o.write(token);
                        });
        try {
            byte status = reply.readByte();
            if (status == StoreProtocol.STATUS_OTHER_RUN) {
                throw new StoreConnector.Refused(
                        "The store at "
                                + endpoint
                                + " belongs to another job (run '"
                                + reply.readUTF()
                                + "', this rank's run is '"
                                + new String(runId, StandardCharsets.UTF_8)
                                + "'): the port is in use by another job. Give each job its own"
                                + " MASTER_PORT (bin/fsdp launch picks a free one when"
                                + " --master-port is not given)");
            }
            if (status != StoreProtocol.STATUS_OK) {
                throw new StoreConnector.Refused(
                        "The store at "
                                + endpoint
                                + " refused this process's job token: the port is in use by another"
                                + " job, or this job's ranks were given different"
                                + " DJL_FSDP_JOB_TOKENs. Give each job its own MASTER_PORT"
                                + " (bin/fsdp launch picks a free one when --master-port is not"
                                + " given) and every rank of a job the same token");
            }
        } catch (IOException e) {
            throw brokenReply(e);
        }
    }
}
