package ai.djl.fsdp.rendezvous;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * PyTorch's TCPStore wire protocol, as its clients speak it (the store that torchrun's agent
 * hosts).
 *
 * <p>A request is a query-type byte and its fields, in the host's byte order (little-endian on
 * every platform PyTorch ships for): strings and values as an unsigned 64-bit length and the bytes,
 * counts and deltas as 64-bit integers. {@code SET} has no reply; {@code GET} answers a length and
 * the bytes; {@code ADD} the new 64-bit sum (the server keeps counters as decimal text); {@code
 * CHECK} one byte, 0 when every key is set, 1 otherwise; {@code WAIT} one byte, 0, once every key
 * is set (and nothing before); {@code GETNUMKEYS} the number of keys. A {@code GET} of a key that
 * is not set makes the server drop the connection, so a client waits or checks first.
 *
 * <p>Two dialects exist. Older servers (PyTorch 1.x, such as Debian's 1.13) number the queries
 * {@code SET=0, COMPARE_SET=1, GET=2, ADD=3, CHECK=4, WAIT=5, GETNUMKEYS=6}; newer ones insert
 * {@code VALIDATE=0} before them (so every other type is one higher) and expect each connection to
 * begin with {@code VALIDATE} and the 32-bit magic number {@value #VALIDATION_MAGIC}: a connection
 * that begins otherwise is dropped (the classic server) or ignored until more data arrives (the
 * libuv server). {@link #probe} tells them apart.
 */
final class TorchStoreWire {

    /** The number a newer server expects after {@code VALIDATE}. */
    static final int VALIDATION_MAGIC = 0x3C85F7CE;

    static final int SET = 0;
    static final int GET = 2;
    static final int ADD = 3;
    static final int CHECK = 4;
    static final int WAIT = 5;
    static final int GETNUMKEYS = 6;

    static final int READY = 0;
    static final int STOP_WAITING = 0;

    /** The largest value this client accepts; the project's values are addresses and ids. */
    static final long MAX_VALUE_BYTES = 4 << 20;

    /** How a server numbers its queries. */
    enum Dialect {
        /** No handshake, {@code SET=0}. */
        LEGACY(0),
        /** A {@code VALIDATE} handshake, {@code VALIDATE=0, SET=1}. */
        VALIDATED(1);

        private final int offset;

        Dialect(int offset) {
            this.offset = offset;
        }

        /** Returns the query-type byte of {@code query} (one of the constants above). */
        byte code(int query) {
            return (byte) (query + offset);
        }
    }

    private TorchStoreWire() {}

    /**
     * Finds the dialect of the server at the other end of {@code socket}, a connection opened for
     * this probe alone (the caller closes it): sends an old {@code GETNUMKEYS} query, which an
     * older server answers with eight bytes at once, and which a newer server drops or ignores, as
     * the first query of a connection that did not validate.
     *
     * @param window how long to wait for an older server's answer
     */
    static Dialect probe(Socket socket, Duration window) throws IOException {
        socket.setSoTimeout(StoreConnector.readTimeoutMillis(window));
        OutputStream out = socket.getOutputStream();
        out.write(GETNUMKEYS);
        out.flush();
        try {
            new DataInputStream(socket.getInputStream()).readFully(new byte[Long.BYTES]);
            return Dialect.LEGACY;
        } catch (EOFException | SocketTimeoutException e) {
            return Dialect.VALIDATED;
        } catch (SocketException e) {
            // A reset: the classic newer server closed a connection that did not validate.
            return Dialect.VALIDATED;
        }
    }

    /** One request, built in memory and sent in one write. */
    static final class Request {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        private final ByteBuffer scratch = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);

        /** Starts a request of {@code query} (a constant above) in {@code dialect}. */
        Request(Dialect dialect, int query) {
            bytes.write(dialect.code(query));
        }

        /** Starts the handshake of a newer server: {@code VALIDATE} and the magic number. */
        static Request validate() {
            Request request = new Request(Dialect.LEGACY, 0);
            request.scratch.clear();
            request.scratch.putInt(VALIDATION_MAGIC);
            request.bytes.write(request.scratch.array(), 0, Integer.BYTES);
            return request;
        }

        Request int64(long value) {
            scratch.clear();
            scratch.putLong(value);
            bytes.write(scratch.array(), 0, Long.BYTES);
            return this;
        }

        Request bytes(byte[] value) {
            int64(value.length);
            bytes.write(value, 0, value.length);
            return this;
        }

        Request string(String value) {
            return bytes(value.getBytes(StandardCharsets.UTF_8));
        }

        void send(OutputStream out) throws IOException {
            bytes.writeTo(out);
            out.flush();
        }
    }

    static int readByte(DataInputStream in) throws IOException {
        return in.readUnsignedByte();
    }

    static long readInt64(DataInputStream in) throws IOException {
        return Long.reverseBytes(in.readLong());
    }

    /** Reads a length and that many bytes, refusing lengths beyond {@link #MAX_VALUE_BYTES}. */
    static byte[] readBytes(DataInputStream in) throws IOException {
        long length = readInt64(in);
        if (length < 0 || length > MAX_VALUE_BYTES) {
            throw new StoreProtocol.MalformedFrameException(
                    "a value of " + Long.toUnsignedString(length) + " bytes");
        }
        byte[] value = new byte[(int) length];
        in.readFully(value);
        return value;
    }
}
