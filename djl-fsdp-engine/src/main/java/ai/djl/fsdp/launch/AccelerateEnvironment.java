package ai.djl.fsdp.launch;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

/**
 * The environment variables through which {@code accelerate launch} hands a config file's training
 * settings to its ranks, with Accelerate's names and value forms: {@code
 * ACCELERATE_MIXED_PRECISION} ({@code no}, {@code fp16}, {@code bf16}, {@code fp8}) always; for
 * {@code distributed_type: FSDP}, {@code ACCELERATE_USE_FSDP=true} and the {@code FSDP_*} variables
 * (booleans as {@code true}/{@code false}, a list of layer classes comma-separated, Accelerate's
 * defaults where the file says nothing). A rank program reads this one contract, whether the
 * launcher set it or {@code --config_file} was given to the program itself.
 */
public final class AccelerateEnvironment {

    public static final String MIXED_PRECISION = "ACCELERATE_MIXED_PRECISION";
    public static final String USE_FSDP = "ACCELERATE_USE_FSDP";
    public static final String VERSION = "FSDP_VERSION";
    public static final String SHARDING_STRATEGY = "FSDP_SHARDING_STRATEGY";
    public static final String RESHARD_AFTER_FORWARD = "FSDP_RESHARD_AFTER_FORWARD";
    public static final String OFFLOAD_PARAMS = "FSDP_OFFLOAD_PARAMS";
    public static final String MIN_NUM_PARAMS = "FSDP_MIN_NUM_PARAMS";
    public static final String AUTO_WRAP_POLICY = "FSDP_AUTO_WRAP_POLICY";
    public static final String TRANSFORMER_CLS_TO_WRAP = "FSDP_TRANSFORMER_CLS_TO_WRAP";
    public static final String BACKWARD_PREFETCH = "FSDP_BACKWARD_PREFETCH";
    public static final String STATE_DICT_TYPE = "FSDP_STATE_DICT_TYPE";
    public static final String FORWARD_PREFETCH = "FSDP_FORWARD_PREFETCH";
    public static final String USE_ORIG_PARAMS = "FSDP_USE_ORIG_PARAMS";
    public static final String CPU_RAM_EFFICIENT_LOADING = "FSDP_CPU_RAM_EFFICIENT_LOADING";
    public static final String SYNC_MODULE_STATES = "FSDP_SYNC_MODULE_STATES";
    public static final String ACTIVATION_CHECKPOINTING = "FSDP_ACTIVATION_CHECKPOINTING";
    public static final String IGNORED_MODULES = "FSDP_IGNORED_MODULES";

    /** This project's own key, {@code fsdp_communication_quantization}: none in Accelerate. */
    public static final String COMMUNICATION_QUANTIZATION = "FSDP_COMMUNICATION_QUANTIZATION";

    private static final List<String> PRECISIONS = List.of("no", "fp16", "bf16", "fp8");
    private static final List<String> STRATEGIES =
            List.of(
                    "FULL_SHARD",
                    "SHARD_GRAD_OP",
                    "NO_SHARD",
                    "HYBRID_SHARD",
                    "HYBRID_SHARD_ZERO2");

    private final Function<String, String> where;
    private final Map<String, String> variables = new LinkedHashMap<>();

    private AccelerateEnvironment(Function<String, String> where) {
        this.where = where;
    }

    /**
     * Builds the variables of a config file whose keys are known.
     *
     * @param where names where a key's value came from, for messages (the file and key, or the
     *     flag)
     * @param top the file's top-level mapping
     * @param fsdp its {@code fsdp_config} with every key spelt {@code fsdp_*} (may be empty)
     * @return the variables, in Accelerate's order
     * @throws IllegalArgumentException naming the key for a value Accelerate would refuse
     */
    static Map<String, String> of(
            Function<String, String> where, Map<?, ?> top, Map<String, Object> fsdp) {
        AccelerateEnvironment env = new AccelerateEnvironment(where);
        Object precision = top.get("mixed_precision");
        String mixed = precision == null ? "no" : text(precision).toLowerCase(Locale.ROOT);
        if (!PRECISIONS.contains(mixed)) {
            throw env.bad("mixed_precision", precision, String.join(", ", PRECISIONS));
        }
        env.variables.put(MIXED_PRECISION, mixed);
        Object type = top.get("distributed_type");
        if ("FSDP".equals(type) || (type == null && top.get("fsdp_config") != null)) {
            env.fsdp(fsdp);
        }
        return env.variables;
    }

    private void fsdp(Map<String, Object> fsdp) {
        variables.put(USE_FSDP, "true");
        String version = text(fsdp.getOrDefault("fsdp_version", 1));
        if (!List.of("1", "2").contains(version)) {
            throw bad("fsdp_config.fsdp_version", version, "1, 2");
        }
        variables.put(VERSION, version);
        Object reshard = fsdp.get("fsdp_reshard_after_forward");
        Object strategy = fsdp.get("fsdp_sharding_strategy");
        if (strategy == null && reshard != null && !(reshard instanceof Boolean)) {
            strategy = reshard; // accelerate config writes FSDP 1's strategy under this key
        }
        String name = strategy == null ? "FULL_SHARD" : text(strategy).toUpperCase(Locale.ROOT);
        if (!STRATEGIES.contains(name) && !name.matches("[1-5]")) {
            throw bad(
                    "fsdp_config.fsdp_sharding_strategy", strategy, String.join(", ", STRATEGIES));
        }
        variables.put(SHARDING_STRATEGY, name);
        variables.put(RESHARD_AFTER_FORWARD, flag(fsdp, "fsdp_reshard_after_forward", true));
        variables.put(OFFLOAD_PARAMS, flag(fsdp, "fsdp_offload_params", false));
        variables.put(MIN_NUM_PARAMS, text(fsdp.getOrDefault("fsdp_min_num_params", 100000000)));
        putIfGiven(AUTO_WRAP_POLICY, fsdp.get("fsdp_auto_wrap_policy"));
        putIfGiven(TRANSFORMER_CLS_TO_WRAP, fsdp.get("fsdp_transformer_layer_cls_to_wrap"));
        Object prefetch = fsdp.get("fsdp_backward_prefetch");
        putIfGiven(
                BACKWARD_PREFETCH,
                prefetch != null ? prefetch : fsdp.get("fsdp_backward_prefetch_policy"));
        putIfGiven(STATE_DICT_TYPE, fsdp.get("fsdp_state_dict_type"));
        variables.put(FORWARD_PREFETCH, flag(fsdp, "fsdp_forward_prefetch", false));
        variables.put(USE_ORIG_PARAMS, flag(fsdp, "fsdp_use_orig_params", true));
        String efficient = flag(fsdp, "fsdp_cpu_ram_efficient_loading", true);
        String sync = flag(fsdp, "fsdp_sync_module_states", true);
        if (efficient.equals("true") && sync.equals("false")) {
            throw new IllegalArgumentException(
                    where.apply("fsdp_config.fsdp_cpu_ram_efficient_loading")
                            + " true needs"
                            + " fsdp_sync_module_states true (only rank 0 reads the weights);"
                            + " set one of them");
        }
        variables.put(CPU_RAM_EFFICIENT_LOADING, efficient);
        variables.put(SYNC_MODULE_STATES, sync);
        variables.put(ACTIVATION_CHECKPOINTING, flag(fsdp, "fsdp_activation_checkpointing", false));
        putIfGiven(IGNORED_MODULES, fsdp.get("fsdp_ignored_modules"));
        putIfGiven(COMMUNICATION_QUANTIZATION, fsdp.get("fsdp_communication_quantization"));
    }

    private void putIfGiven(String name, Object value) {
        if (value != null) {
            variables.put(name, text(value));
        }
    }

    /** A boolean as Accelerate passes it on: Python's str(value).lower(). */
    private static String flag(Map<String, Object> fsdp, String key, boolean otherwise) {
        Object value = fsdp.get(key);
        return value == null ? Boolean.toString(otherwise) : text(value).toLowerCase(Locale.ROOT);
    }

    /** A value as text; a list comma-separated. */
    private static String text(Object value) {
        if (value instanceof Collection<?> list) {
            List<String> items = new ArrayList<>();
            list.forEach(item -> items.add(String.valueOf(item).trim()));
            return String.join(",", items);
        }
        return String.valueOf(value).trim();
    }

    private IllegalArgumentException bad(String key, Object value, String valid) {
        return new IllegalArgumentException(
                where.apply(key) + " '" + value + "' is not one of " + valid);
    }
}
