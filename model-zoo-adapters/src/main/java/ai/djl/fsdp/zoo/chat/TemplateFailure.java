package ai.djl.fsdp.zoo.chat;

/**
 * What Jinja raises while rendering a conversation, carried through Jinjava to the caller: the
 * template's own {@code raise_exception(message)}, or an operation Python refuses (a {@code
 * TypeError}, such as {@code 'a' + none}).
 */
final class TemplateFailure extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final boolean raisedByTemplate;

    private TemplateFailure(String message, boolean raisedByTemplate) {
        super(message);
        this.raisedByTemplate = raisedByTemplate;
    }

    /**
     * An operation Python refuses.
     *
     * @param message Python's error, its type first ({@code TypeError: ...})
     */
    TemplateFailure(String message) {
        this(message, false);
    }

    /**
     * Called by templates as {@code raise_exception(message)}.
     *
     * @param message the template's reason
     * @return never
     * @throws TemplateFailure always
     */
    public static String raiseException(String message) {
        throw new TemplateFailure(message, true);
    }

    /** Returns whether the template refused with {@code raise_exception}. */
    boolean raisedByTemplate() {
        return raisedByTemplate;
    }
}
