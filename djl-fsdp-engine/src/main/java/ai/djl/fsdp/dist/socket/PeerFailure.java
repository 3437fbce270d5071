package ai.djl.fsdp.dist.socket;

/** A ring neighbour broke its connection or stopped answering; names the rank to blame. */
final class PeerFailure extends Exception {

    private static final long serialVersionUID = 1L;

    private final int rank;

    PeerFailure(int rank, String message, Throwable cause) {
        super(message, cause);
        this.rank = rank;
    }

    /** Returns the rank that failed, as seen from here. */
    int rank() {
        return rank;
    }
}
