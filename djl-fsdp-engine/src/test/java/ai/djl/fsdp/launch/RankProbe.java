package ai.djl.fsdp.launch;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.launch.rank.RankCommand;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * A rank's main class for the launcher tests. {@code report} prints what the launcher gave the rank
 * (one {@code key=value} per line, one line on stderr) and exits 0. {@code fail RANK CODE DIR}:
 * every rank writes its process id to {@code DIR/rank<N>.pid}; rank {@code RANK} waits until all
 * ranks have, then exits with {@code CODE}, while the others sleep for ten minutes.
 */
public final class RankProbe {

    /** The variables {@code report} prints, then the two thread properties. */
    static final List<String> VARIABLES =
            List.of(
                    "RANK",
                    "WORLD_SIZE",
                    "LOCAL_RANK",
                    "LOCAL_WORLD_SIZE",
                    "MASTER_ADDR",
                    "MASTER_PORT",
                    DistributedEnv.JOB_TOKEN_VARIABLE,
                    "OMP_NUM_THREADS",
                    RankCommand.MALLOC_TUNABLES_VARIABLE,
                    "LD_PRELOAD");

    private RankProbe() {}

    public static void main(String[] args) throws IOException, InterruptedException {
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
                Path pids = Path.of(args[3]);
                Files.writeString(
                        pids.resolve("rank" + System.getenv("RANK") + ".pid"),
                        Long.toString(ProcessHandle.current().pid()));
                if (System.getenv("RANK").equals(args[1])) {
                    int worldSize = Integer.parseInt(System.getenv("WORLD_SIZE"));
                    while (pidFiles(pids) < worldSize) {
                        Thread.sleep(20);
                    }
                    System.exit(Integer.parseInt(args[2]));
                }
                Thread.sleep(600_000);
                break;
            default:
                throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    /** Returns how many ranks have written their process id into {@code directory}. */
    static long pidFiles(Path directory) throws IOException {
        try (Stream<Path> files = Files.list(directory)) {
            return files.filter(file -> file.toString().endsWith(".pid")).count();
        }
    }
}
