package ai.djl.fsdp.rendezvous;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;

/**
 * The store's wire format, shared by {@link TcpStore} and {@link TcpStoreServer}.
 *
 * <p>Every message is a frame: a big-endian {@code int} length, {@code 1..MAX_FRAME_BYTES}, then
 * that many bytes. A connection opens with a hello frame ({@link #MAGIC}, {@link #VERSION}, the run
 * id's length as one byte and its UTF-8 bytes, then the job token's UTF-8 bytes) answered by one
 * status byte; then each request frame (an op byte and its fields) is answered by one reply frame
 * (a status byte and its fields). Lengths are checked before anything is allocated: a hello may be
 * no longer than {@link #maxHelloBytes} for the server's token, so a client that has not proven it
 * knows the token cannot make the server allocate more than that.
 */
final class StoreProtocol {

    /** "DJLS": tells a store client from a stray connection at once. */
    static final int MAGIC = 0x444A4C53;

    static final byte VERSION = 2;

    /** The longest run id, in UTF-8 bytes. */
    static final int MAX_RUN_ID_BYTES = 64;

    /** The largest frame either side accepts; store values are small (addresses, ids). */
    static final int MAX_FRAME_BYTES = 4 << 20;

    static final byte OP_SET = 1;
    static final byte OP_GET = 2;
    static final byte OP_ADD = 3;
    static final byte OP_WAIT = 4;

    static final byte STATUS_OK = 0;
    static final byte STATUS_TIMEOUT = 1;
    static final byte STATUS_REFUSED = 2;
    static final byte STATUS_ERROR = 3;
    static final byte STATUS_OTHER_RUN = 4;

    private StoreProtocol() {}

    /** Returns the longest hello a server holding a token of {@code tokenBytes} accepts. */
    static int maxHelloBytes(int tokenBytes) {
        return 4 + 1 + 1 + MAX_RUN_ID_BYTES + tokenBytes;
    }

    /** Reads one frame, refusing lengths outside {@code 1..MAX_FRAME_BYTES}. */
    static DataInputStream readFrame(DataInputStream in) throws IOException {
        return readFrame(in, MAX_FRAME_BYTES);
    }

    /** Reads one frame, refusing lengths outside {@code 1..maxBytes}. */
    static DataInputStream readFrame(DataInputStream in, int maxBytes) throws IOException {
        int length = in.readInt();
        if (length <= 0 || length > maxBytes) {
            throw new MalformedFrameException(
                    "frame length " + length + " is outside 1.." + maxBytes);
        }
        byte[] frame = new byte[length];
        in.readFully(frame);
        return new DataInputStream(new ByteArrayInputStream(frame));
    }

    /** Writes {@code body} as one frame and flushes it. */
    static void writeFrame(DataOutputStream out, FrameBody body) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        body.writeTo(new DataOutputStream(bytes));
        if (bytes.size() > MAX_FRAME_BYTES) {
            throw new IllegalArgumentException(
                    "a store message of "
                            + bytes.size()
                            + " bytes exceeds the limit of "
                            + MAX_FRAME_BYTES
                            + " bytes");
        }
        out.writeInt(bytes.size());
        bytes.writeTo(out);
        out.flush();
    }

    /** Fails a frame whose content cannot be what the protocol allows. */
    static void require(boolean ok, String problem) throws MalformedFrameException {
        if (!ok) {
            throw new MalformedFrameException(problem);
        }
    }

    /** The fields of a frame, written into its buffer. */
    @FunctionalInterface
    interface FrameBody {
        void writeTo(DataOutputStream out) throws IOException;
    }

    /** A frame that breaks the protocol; the connection that sent it is dropped. */
    static final class MalformedFrameException extends IOException {
        private static final long serialVersionUID = 1L;

        MalformedFrameException(String message) {
            super(message);
        }
    }
}
