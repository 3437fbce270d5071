package ai.djl.fsdp.launch;

import java.util.List;

/**
 * A rank's main class for the launcher tests. {@code report} prints what the launcher gave the
 * rank (one {@code key=value} per line, one line on stderr) and exits 0; {@code fail RANK CODE}
 * makes rank {@code RANK} exit with {@code CODE} while every other rank sleeps for ten minutes.
 */
public final class RankProbe {

    private static final List<String> VARIABLES =
            List.of(
                    "RANK",
                    "WORLD_SIZE",
                    "LOCAL_RANK",
                    "LOCAL_WORLD_SIZE",
                    "MASTER_ADDR",
                    "MASTER_PORT",
                    Launcher.JOB_TOKEN,
                    "OMP_NUM_THREADS");

    private RankProbe() {}

    public static void main(String[] args) throws InterruptedException {
        System.out.println("pid=" + ProcessHandle.current().pid());
        switch (args[0]) {
            case "report":
                for (String name : VARIABLES) {
                    System.out.println(name + "=" + System.getenv(name));
                }
                System.out.println(
                        "num_threads=" + System.getProperty("ai.djl.pytorch.num_threads"));
                System.out.println(
                        "num_interop_threads="
                                + System.getProperty("ai.djl.pytorch.num_interop_threads"));
                System.err.println("stderr line");
                break;
            case "fail":
                System.out.flush();
                if (System.getenv("RANK").equals(args[1])) {
                    System.exit(Integer.parseInt(args[2]));
                }
                Thread.sleep(600_000);
                break;
            default:
                throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }
}
