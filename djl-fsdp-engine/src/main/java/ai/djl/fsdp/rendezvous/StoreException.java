package ai.djl.fsdp.rendezvous;

/** The store could not be reached, refused this process, or failed a call. */
public class StoreException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    public StoreException(String message) {
        super(message);
    }

    public StoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
