package ai.djl.fsdp.dist;

import java.util.OptionalInt;

/**
 * A collective failed: a peer died or stopped answering, or the arguments do not fit. When one rank
 * is to blame, {@link #getFailedRank()} names it, so a launcher can report that rank rather than
 * the bystander that noticed.
 */
public class CollectiveException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final int failedRank;

    public CollectiveException(String message) {
        this(message, null, -1);
    }

    public CollectiveException(String message, Throwable cause) {
        this(message, cause, cause instanceof CollectiveException ? rankOf(cause) : -1);
    }

    /**
     * Constructs a failure caused by rank {@code failedRank} (-1: no single rank).
     *
     * @param message the message, which names the rank
     * @param cause the cause, or null
     * @param failedRank the rank at fault, or -1
     */
    public CollectiveException(String message, Throwable cause, int failedRank) {
        super(message, cause);
        this.failedRank = failedRank;
    }

    private static int rankOf(Throwable cause) {
        return ((CollectiveException) cause).getFailedRank().orElse(-1);
    }

    /** Returns the rank that failed (died, stopped or hung), when a single rank is to blame. */
    public OptionalInt getFailedRank() {
        return failedRank < 0 ? OptionalInt.empty() : OptionalInt.of(failedRank);
    }

    /**
     * Returns the rank a failure blames: that of the first collective failure in its cause chain
     * that names one.
     *
     * @param failure any exception
     * @return the blamed rank, or empty
     */
    public static OptionalInt failedRankOf(Throwable failure) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof CollectiveException) {
                OptionalInt rank = ((CollectiveException) cause).getFailedRank();
                if (rank.isPresent()) {
                    return rank;
                }
            }
        }
        return OptionalInt.empty();
    }
}
