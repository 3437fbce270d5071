package ai.djl.fsdp.launch;

/** A rank started by the {@link Launcher} exited with a non-zero code; the others were stopped. */
public class RankFailedException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final int rank;
    private final int exitCode;

    /**
     * Constructs the failure of one rank.
     *
     * @param rank the global rank that failed first
     * @param exitCode its exit code (128 + the signal number when a signal ended it)
     */
    public RankFailedException(int rank, int exitCode) {
        super("rank " + rank + " exited with code " + exitCode + "; stopped the other ranks");
        this.rank = rank;
        this.exitCode = exitCode;
    }

    /**
     * Returns the global rank that failed first.
     *
     * @return the rank
     */
    public int rank() {
        return rank;
    }

    /**
     * Returns the failed rank's exit code.
     *
     * @return the exit code, never 0
     */
    public int exitCode() {
        return exitCode;
    }
}
