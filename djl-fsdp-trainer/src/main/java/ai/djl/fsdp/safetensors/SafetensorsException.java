package ai.djl.fsdp.safetensors;

/** A safetensors file or checkpoint that cannot be read: corrupt, truncated or inconsistent. */
public class SafetensorsException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates an exception.
     *
     * @param message what is wrong, naming the file or tensor
     */
    public SafetensorsException(String message) {
        super(message);
    }

    /**
     * Creates an exception with a cause.
     *
     * @param message what is wrong, naming the file or tensor
     * @param cause the underlying error
     */
    public SafetensorsException(String message, Throwable cause) {
        super(message, cause);
    }
}
