package ai.djl.fsdp.rendezvous;

/** A store call waited its full timeout for keys or ranks that did not arrive. */
public class StoreTimeoutException extends StoreException {

    private static final long serialVersionUID = 1L;

    public StoreTimeoutException(String message) {
        super(message);
    }
}
