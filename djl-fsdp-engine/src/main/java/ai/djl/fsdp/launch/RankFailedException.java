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
        this(rank, exitCode, null);
    }

    /**
     * Constructs the failure of one rank with its own account of it.
     *
     * @param rank the global rank that failed first
     * @param exitCode its exit code (128 + the signal number when a signal ended it)
     * @param detail what the rank reported, or what is known of it; null when nothing is
     */
    public RankFailedException(int rank, int exitCode, String detail) {
        this(
                "rank "
                        + rank
                        + " "
                        + describeExit(exitCode)
                        + (detail == null ? "" : ": " + detail)
                        + "; stopped the other ranks",
                rank,
                exitCode,
                false);
    }

    RankFailedException(String message, int rank, int exitCode) {
        this(message, rank, exitCode, false);
    }

    /**
     * Describes an exit code as a process status: a code above 128 is a signal's (as a shell
     * reports it), named as {@code kill -l} names it.
     *
     * @param exitCode the exit code
     * @return such as "exited with code 1" or "was killed by SIGKILL"
     */
    public static String describeExit(int exitCode) {
        String[] names = {
            "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE",
            "SIGKILL", "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM"
        };
        int signal = exitCode - 128;
        if (signal >= 1 && signal <= names.length) {
            return "was killed by "
                    + names[signal - 1]
                    + (signal == 9 ? " (the system's out-of-memory killer sends it too)" : "");
        }
        return "exited with code " + exitCode;
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
                        + " "
                        + describeExit(exitCode)
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
    public int getRank() {
        return rank;
    }

    /**
     * Returns the failed rank's exit code.
     *
     * @return the exit code, never 0
     */
    public int getExitCode() {
        return exitCode;
    }

    /**
     * Returns whether the ranks exited because the launcher itself was stopped.
     *
     * @return true when no rank failed of its own accord
     */
    public boolean isLauncherStopped() {
        return launcherStopped;
    }
}
