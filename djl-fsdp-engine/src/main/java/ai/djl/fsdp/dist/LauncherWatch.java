package ai.djl.fsdp.dist;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * Ends a rank whose launcher has died. {@code bin/fsdp launch} gives each rank its process id and
 * start time in {@value #PID_VARIABLE} and {@value #START_VARIABLE}; a daemon thread checks every
 * {@link #POLL} that a process with that id and start time still lives (the start time tells a
 * reused id from the launcher), and otherwise prints why and exits with {@value #EXIT_CODE}. A
 * launcher killed by SIGKILL cannot stop its ranks itself: without this they would train on as
 * orphans and write an output nobody waits for.
 */
public final class LauncherWatch {

    /** The variable holding the launcher's process id. */
    public static final String PID_VARIABLE = "DJL_FSDP_LAUNCHER_PID";

    /** The variable holding the launcher's start time, in milliseconds since the epoch. */
    public static final String START_VARIABLE = "DJL_FSDP_LAUNCHER_START";

    /** The exit code of a rank whose launcher died. */
    public static final int EXIT_CODE = 75;

    private static final Duration POLL = Duration.ofMillis(500);

    /** How long the exit's shutdown hooks may take before the process halts. */
    private static final Duration EXIT_GRACE = Duration.ofSeconds(5);

    private static boolean armed;

    private LauncherWatch() {}

    /**
     * Returns the variables that tell a rank who its launcher is: this process.
     *
     * @return the values of {@value #PID_VARIABLE} and {@value #START_VARIABLE}
     */
    public static String[] describeThisProcess() {
        ProcessHandle self = ProcessHandle.current();
        return new String[] {
            Long.toString(self.pid()),
            Long.toString(self.info().startInstant().map(Instant::toEpochMilli).orElse(0L))
        };
    }

    /**
     * Starts watching the launcher named in this process's environment, once; does nothing when
     * none is named (a rank started by torchrun, srun or by hand).
     *
     * @param rank this process's rank, for the message
     */
    public static synchronized void armFromEnvironment(int rank) {
        String pid = System.getenv(PID_VARIABLE);
        if (armed || pid == null || pid.isBlank()) {
            return;
        }
        long launcherPid;
        long startMillis;
        try {
            launcherPid = Long.parseLong(pid.trim());
            String start = System.getenv(START_VARIABLE);
            startMillis = start == null || start.isBlank() ? 0 : Long.parseLong(start.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    PID_VARIABLE
                            + " and "
                            + START_VARIABLE
                            + " must be whole numbers; bin/fsdp launch sets them, unset them"
                            + " when starting a rank another way",
                    e);
        }
        armed = true;
        Thread watch =
                new Thread(() -> watch(rank, launcherPid, startMillis), "djl-fsdp-launcher-watch");
        watch.setDaemon(true);
        watch.start();
    }

    /** Returns whether the process {@code pid} started at {@code startMillis} still lives. */
    static boolean isAlive(long pid, long startMillis) {
        Optional<ProcessHandle> handle = ProcessHandle.of(pid);
        if (handle.isEmpty() || !handle.get().isAlive()) {
            return false;
        }
        if (startMillis == 0) {
            return true;
        }
        return handle.get()
                .info()
                .startInstant()
                .map(start -> Math.abs(start.toEpochMilli() - startMillis) < 1000)
                .orElse(true);
    }

    private static void watch(int rank, long pid, long startMillis) {
        try {
            while (isAlive(pid, startMillis)) {
                Thread.sleep(POLL.toMillis());
            }
        } catch (InterruptedException e) {
            return;
        }
        System.err.println(
                "rank "
                        + rank
                        + ": its launcher (process "
                        + pid
                        + ") has died, so this rank exits (code "
                        + EXIT_CODE
                        + ")");
        System.err.flush();
        Thread halt =
                new Thread(
                        () -> {
                            try {
                                Thread.sleep(EXIT_GRACE.toMillis());
                            } catch (InterruptedException e) {
                                return;
                            }
                            Runtime.getRuntime().halt(EXIT_CODE);
                        },
                        "djl-fsdp-launcher-watch-halt");
        halt.setDaemon(true);
        halt.start();
        System.exit(EXIT_CODE);
    }
}
