package ai.djl.fsdp.launch;

/**
 * A rank started by the {@link Launcher} exited with a non-zero code and the others were stopped;
 * or the launcher itself was stopped, and with it the ranks ({@link #launcherStopped}).
 */
public class RankFailedException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final int rank;
    private final int exitCode;
    private final boolean launcherStopped;

    /**
     * Constructs the failure of one rank.
     *
     * @param rank the global rank that failed first
     * @param exitCode its exit code (128 + the signal number when a signal ended it)
     */
    public RankFailedException(int rank, int exitCode) {
        this(
                "rank " + rank + " exited with code " + exitCode + "; stopped the other ranks",
                rank,
                exitCode,
                false);
    }

    private RankFailedException(String message, int rank, int exitCode, boolean launcherStopped) {
        super(message);
        this.rank = rank;
        this.exitCode = exitCode;
        this.launcherStopped = launcherStopped;
    }

    /**
     * Describes ranks that exited because the launcher was stopped (Ctrl-C, SIGTERM) and stopped
     * them: no rank failed of its own accord.
     *
     * @param rank the first rank seen to exit
     * @param exitCode its exit code (143 after SIGTERM)
     * @return the exception
     */
    static RankFailedException stopped(int rank, int exitCode) {
        return new RankFailedException(
                "the launcher was stopped and stopped its ranks (rank "
                        + rank
                        + " exited with code "
                        + exitCode
                        + ")",
                rank,
                exitCode,
                true);
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

    /**
     * Returns whether the ranks exited because the launcher itself was stopped.
     *
     * @return true when no rank failed of its own accord
     */
    public boolean launcherStopped() {
        return launcherStopped;
    }
}
