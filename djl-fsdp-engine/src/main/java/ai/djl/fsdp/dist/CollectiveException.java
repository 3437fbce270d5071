package ai.djl.fsdp.dist;

/** A collective failed: a peer died or stopped answering, or the arguments do not fit. */
public class CollectiveException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    public CollectiveException(String message) {
        super(message);
    }

    public CollectiveException(String message, Throwable cause) {
        super(message, cause);
    }
}
