package ai.djl.fsdp.launch;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code accelerate launch}'s own flags on {@code bin/fsdp launch}: the job's shape ({@code
 * --num_processes} over all machines, {@code --num_machines}, {@code --machine_rank}, {@code
 * --main_process_ip}, {@code --main_process_port}), {@code --mixed_precision}, {@code --use_fsdp}
 * and one {@code --fsdp_*} flag per {@code fsdp_config} key. They stand for the config file's keys
 * of the same names and win over them ({@link AccelerateLaunchConfig#of}). Each is also accepted
 * with dashes ({@code --num-processes}), as newer Accelerate releases accept.
 */
final class AccelerateFlags {

    @Option(
            names = {"--num_processes", "--num-processes"},
            paramLabel = "N",
            description = "accelerate launch's: the ranks over all machines.")
    private Integer numProcesses;

    @Option(
            names = {"--num_machines", "--num-machines"},
            paramLabel = "M",
            description = "accelerate launch's: the machines (nodes) in the job.")
    private Integer numMachines;

    @Option(
            names = {"--machine_rank", "--machine-rank"},
            paramLabel = "R",
            description = "accelerate launch's: this machine's index.")
    private Integer machineRank;

    @Option(
            names = {"--main_process_ip", "--main-process-ip"},
            paramLabel = "ADDR",
            description = "accelerate launch's: the address of machine 0.")
    private String mainProcessIp;

    @Option(
            names = {"--main_process_port", "--main-process-port"},
            paramLabel = "PORT",
            description = "accelerate launch's: the rendezvous port on machine 0.")
    private Integer mainProcessPort;

    @Option(
            names = {"--mixed_precision", "--mixed-precision"},
            paramLabel = "no|fp16|bf16|fp8",
            description = "accelerate launch's: ACCELERATE_MIXED_PRECISION for the ranks.")
    private String mixedPrecision;

    @Option(
            names = {"--use_fsdp", "--use-fsdp"},
            description = "accelerate launch's: distributed_type FSDP (the --fsdp_* flags apply).")
    private boolean useFsdp;

    private CommandSpec spec;

    /** Adds one {@code --fsdp_*} option per {@code fsdp_config} key. */
    @Spec
    void setSpec(CommandSpec spec) {
        this.spec = spec;
        for (String key : new TreeSet<>(AccelerateKeys.FSDP)) {
            spec.addOption(
                    OptionSpec.builder("--" + key, "--" + key.replace('_', '-'))
                            .paramLabel("VALUE")
                            .type(String.class)
                            .description("accelerate launch's: fsdp_config." + key + ".")
                            .build());
        }
    }

    /**
     * Returns the flags given, as config-file keys: top-level keys ({@code --use_fsdp} as {@code
     * distributed_type: FSDP}) and {@code fsdp_*} keys, {@code true}/{@code false} as booleans.
     *
     * @return the keys and values, empty when no flag was given
     */
    Map<String, Object> asConfigKeys() {
        Map<String, Object> keys = new LinkedHashMap<>();
        putIfGiven(keys, "num_processes", numProcesses);
        putIfGiven(keys, "num_machines", numMachines);
        putIfGiven(keys, "machine_rank", machineRank);
        putIfGiven(keys, "main_process_ip", mainProcessIp);
        putIfGiven(keys, "main_process_port", mainProcessPort);
        putIfGiven(keys, "mixed_precision", mixedPrecision);
        if (useFsdp) {
            keys.put("distributed_type", "FSDP");
        }
        for (String key : new TreeSet<>(AccelerateKeys.FSDP)) {
            String value = spec.findOption("--" + key).getValue();
            if (value != null) {
                String lower = value.trim().toLowerCase(Locale.ROOT);
                keys.put(
                        key,
                        lower.equals("true") || lower.equals("false")
                                ? (Object) Boolean.valueOf(lower)
                                : value);
            }
        }
        return keys;
    }

    private static void putIfGiven(Map<String, Object> keys, String key, Object value) {
        if (value != null) {
            keys.put(key, value);
        }
    }
}
