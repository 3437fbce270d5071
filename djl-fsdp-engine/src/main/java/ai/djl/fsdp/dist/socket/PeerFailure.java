package ai.djl.fsdp.dist.socket;

/** A ring neighbour broke its connection or stopped answering; the message names the rank. */
final class PeerFailure extends Exception {

    private static final long serialVersionUID = 1L;

    private final int peer;

    PeerFailure(String message, Throwable cause) {
        this(message, cause, -1);
    }

    PeerFailure(String message, Throwable cause, int peer) {
        super(message, cause);
        this.peer = peer;
    }

    /** Returns the rank at fault, or -1 when none is (this rank's group was closed). */
    int peer() {
        return peer;
    }
}
