package ai.djl.fsdp.zoo.finetune.config;

import ai.djl.fsdp.launch.AccelerateEnvironment;
import ai.djl.fsdp.launch.AccelerateLaunchConfig;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import picocli.CommandLine.IDefaultValueProvider;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * {@code bin/fsdp finetune}'s defaults from Accelerate's variables ({@link AccelerateEnvironment}:
 * {@code ACCELERATE_MIXED_PRECISION}, and with {@code ACCELERATE_USE_FSDP=true} the {@code FSDP_*}
 * ones), as {@code bin/fsdp launch --config_file} or {@code accelerate launch} set them, or as a
 * {@code --config_file} given to finetune itself stands for: flags on the command line win over
 * them, and they win over the flags' own defaults.
 */
public final class AccelerateDefaults implements IDefaultValueProvider {

    private final Map<String, String> env;
    private final List<String> fileNotes = new ArrayList<>();

    /** Reads this process's environment (picocli creates the provider with this constructor). */
    public AccelerateDefaults() {
        this(System.getenv());
    }

    /**
     * Reads the given variables.
     *
     * @param env the variables
     */
    public AccelerateDefaults(Map<String, String> env) {
        this.env = env;
    }

    /**
     * Returns the defaults a config file stands for: its variables, as the launcher would set them,
     * over this process's own.
     *
     * @param file Accelerate's config file
     * @param environment this process's variables
     * @param worldSize the ranks of this job, compared with the file's {@code num_processes}
     * @return the defaults, with the file's notes
     * @throws IllegalArgumentException naming the file and key for a bad file
     */
    public static AccelerateDefaults ofFile(
            Path file, Map<String, String> environment, int worldSize) {
        AccelerateLaunchConfig config = AccelerateLaunchConfig.read(file);
        Map<String, String> merged = new HashMap<>(environment);
        merged.putAll(config.getEnvironment());
        AccelerateDefaults defaults = new AccelerateDefaults(merged);
        defaults.fileNotes.addAll(config.getNotes());
        Integer wanted = config.getNumProcesses();
        if (wanted != null && wanted != worldSize) {
            defaults.fileNotes.add(
                    "num_processes "
                            + wanted
                            + ": this job has "
                            + worldSize
                            + " ranks (bin/fsdp launch --config_file starts num_processes)");
        }
        return defaults;
    }

    @Override
    public String defaultValue(ArgSpec argument) {
        if (!(argument instanceof OptionSpec option)) {
            return null;
        }
        String precision = env.get(AccelerateEnvironment.MIXED_PRECISION);
        switch (option.longestName()) {
            case "--bf16":
                return "bf16".equals(precision) ? "true" : null;
            case "--fp16":
                return "fp16".equals(precision) ? "true" : null;
            default:
                return usesFsdp() ? fsdpDefault(option.longestName()) : null;
        }
    }

    /**
     * Returns one line for each setting of the variables that has no meaning here.
     *
     * @return the notes
     */
    public List<String> notes() {
        List<String> notes = new ArrayList<>(fileNotes);
        String precision = env.get(AccelerateEnvironment.MIXED_PRECISION);
        if ("fp8".equals(precision)) {
            notes.add("mixed_precision fp8: no float8 kernels here; training runs in float32");
        }
        if (precision != null && !usesFsdp()) {
            notes.add(
                    AccelerateEnvironment.USE_FSDP
                            + " is not true (distributed_type is not FSDP): the ranks train with"
                            + " FSDP regardless, with finetune's defaults");
        }
        if (usesFsdp() && env.get(AccelerateEnvironment.IGNORED_MODULES) != null) {
            notes.add("fsdp_ignored_modules: every module is sharded");
        }
        return notes;
    }

    private boolean usesFsdp() {
        return "true".equalsIgnoreCase(env.get(AccelerateEnvironment.USE_FSDP));
    }

    private String fsdpDefault(String flag) {
        switch (flag) {
            case "--fsdp_sharding_strategy":
                return strategy();
            case "--fsdp_transformer_layer_cls_to_wrap":
                return env.get(AccelerateEnvironment.TRANSFORMER_CLS_TO_WRAP);
            case "--fsdp_auto_wrap_policy":
                return env.get(AccelerateEnvironment.AUTO_WRAP_POLICY);
            case "--fsdp_min_num_params":
                return env.get(AccelerateEnvironment.MIN_NUM_PARAMS);
            case "--fsdp_backward_prefetch_policy":
            case "--fsdp_backward_prefetch":
                return env.get(AccelerateEnvironment.BACKWARD_PREFETCH);
            case "--fsdp_forward_prefetch":
                return env.get(AccelerateEnvironment.FORWARD_PREFETCH);
            case "--fsdp_offload_params":
                return env.get(AccelerateEnvironment.OFFLOAD_PARAMS);
            case "--fsdp_communication_quantization":
                return env.get(AccelerateEnvironment.COMMUNICATION_QUANTIZATION);
            case "--fsdp_state_dict_type":
                return env.get(AccelerateEnvironment.STATE_DICT_TYPE);
            case "--fsdp_use_orig_params":
                return env.get(AccelerateEnvironment.USE_ORIG_PARAMS);
            case "--fsdp_cpu_ram_efficient_loading":
                return env.get(AccelerateEnvironment.CPU_RAM_EFFICIENT_LOADING);
            case "--fsdp_sync_module_states":
                return env.get(AccelerateEnvironment.SYNC_MODULE_STATES);
            case "--gradient_checkpointing":
                return env.get(AccelerateEnvironment.ACTIVATION_CHECKPOINTING);
            default:
                return null;
        }
    }

    /**
     * The strategy as Accelerate's plugin reads it: FSDP 2 from {@code FSDP_RESHARD_AFTER_FORWARD}
     * (true: FULL_SHARD, false: SHARD_GRAD_OP); FSDP 1 from {@code FSDP_SHARDING_STRATEGY} (a name
     * or 1-5), else {@code FSDP_RESHARD_AFTER_FORWARD} as a name.
     */
    private String strategy() {
        String reshard = env.get(AccelerateEnvironment.RESHARD_AFTER_FORWARD);
        String strategy = env.get(AccelerateEnvironment.SHARDING_STRATEGY);
        if ("2".equals(env.get(AccelerateEnvironment.VERSION)) || strategy == null) {
            if (reshard == null) {
                return strategy;
            }
            switch (reshard.toLowerCase(Locale.ROOT)) {
                case "true":
                    return "FULL_SHARD";
                case "false":
                    return "SHARD_GRAD_OP";
                default:
                    return reshard.toUpperCase(Locale.ROOT);
            }
        }
        return strategy;
    }
}
