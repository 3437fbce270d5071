package ai.djl.fsdp.launch;

import ai.djl.fsdp.cli.Subcommand;
import ai.djl.fsdp.launch.rank.RankThreads;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * A bin/fsdp command for the launcher's tests (listed in the test class path's services): it takes
 * {@code --config_file} as finetune does and prints what its rank was given (the job's variables,
 * Accelerate's {@code ACCELERATE_*} and {@code FSDP_*} ones, its arguments), one {@code key=value}
 * per line.
 */
@Command(name = "config-file-probe")
public final class ConfigFileProbe implements Subcommand {

    @Option(names = "--config_file")
    private Path configFile;

    @Parameters(arity = "0..*")
    private List<String> rest = new ArrayList<>();

    @Override
    public Integer call() {
        for (String name :
                List.of(
                        "RANK",
                        "WORLD_SIZE",
                        "LOCAL_WORLD_SIZE",
                        "MASTER_PORT",
                        "OMP_NUM_THREADS")) {
            System.out.println(name + "=" + System.getenv(name));
        }
        new TreeMap<>(System.getenv())
                .forEach(
                        (name, value) -> {
                            if (name.startsWith("ACCELERATE_") || name.startsWith("FSDP_")) {
                                System.out.println(name + "=" + value);
                            }
                        });
        System.out.println("num_threads=" + System.getProperty(RankThreads.THREADS_PROPERTY));
        System.out.println("config_file=" + configFile);
        System.out.println("args=" + String.join(" ", rest));
        return 0;
    }
}
