package ai.djl.fsdp.launch;

/** The launcher's checks of its settings: a failed one is the caller's mistake, and says which. */
final class Require {

    private Require() {}

    /**
     * Throws if a setting is wrong.
     *
     * @param condition what a right setting satisfies
     * @param message what is wrong otherwise
     * @throws IllegalArgumentException with {@code message} if {@code condition} is false
     */
    static void that(boolean condition, String message) {
        if (!condition) {
            throw new IllegalArgumentException(message);
        }
    }
}
