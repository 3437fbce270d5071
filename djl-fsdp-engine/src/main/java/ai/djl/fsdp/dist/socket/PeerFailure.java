package ai.djl.fsdp.dist.socket;

/** A ring neighbour broke its connection or stopped answering; the message names the rank. */
final class PeerFailure extends Exception {

    private static final long serialVersionUID = 1L;

    PeerFailure(String message, Throwable cause) {
        super(message, cause);
    }
}
