package ai.djl.fsdp.zoo.finetune.config;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.error.YAMLException;

/**
 * Accelerate's config file ({@code accelerate config} writes it, {@code accelerate launch
 * --config_file} reads it), translated into {@code bin/fsdp finetune}'s flags. Every key Accelerate
 * writes is accepted, in its old and new spellings; those with no meaning here are named in one
 * line; an unknown key is an error naming the nearest known one.
 */
public final class AccelerateConfig {

    /** Top-level keys that concern Accelerate's launcher or other backends, not this trainer. */
    private static final Set<String> LAUNCHER_KEYS =
            Set.of(
                    "compute_environment",
                    "debug",
                    "downcast_bf16",
                    "enable_cpu_affinity",
                    "machine_rank",
                    "main_training_function",
                    "num_machines",
                    "rdzv_backend",
                    "same_network",
                    "main_process_ip",
                    "main_process_port",
                    "use_cpu",
                    "gpu_ids",
                    "dynamo_backend",
                    "dynamo_config",
                    "deepspeed_config",
                    "megatron_lm_config",
                    "command_file",
                    "commands",
                    "ipex_config",
                    "mpirun_config",
                    "fp8_config",
                    "parallelism_config",
                    "tpu_env",
                    "tpu_name",
                    "tpu_zone",
                    "tpu_use_cluster",
                    "tpu_use_sudo",
                    "tpu_config",
                    "use_ipex",
                    "use_mps_device");

    private static final Set<String> TOP_KEYS =
            union(
                    LAUNCHER_KEYS,
                    Set.of("distributed_type", "mixed_precision", "num_processes", "fsdp_config"));

    /** {@code fsdp_config} keys and the finetune flag each becomes (null: read here). */
    private static final Map<String, String> FSDP_FLAGS =
            Map.ofEntries(
                    Map.entry("fsdp_sharding_strategy", "--sharding_strategy"),
                    Map.entry(
                            "fsdp_transformer_layer_cls_to_wrap",
                            "--fsdp_transformer_layer_cls_to_wrap"),
                    Map.entry("fsdp_backward_prefetch", "--fsdp_backward_prefetch"),
                    Map.entry("fsdp_backward_prefetch_policy", "--fsdp_backward_prefetch"),
                    Map.entry("fsdp_sync_module_states", "--fsdp_sync_module_states"),
                    Map.entry("fsdp_offload_params", "--fsdp_offload_params"),
                    Map.entry("fsdp_state_dict_type", "--fsdp_state_dict_type"),
                    Map.entry("fsdp_use_orig_params", "--fsdp_use_orig_params"),
                    Map.entry("fsdp_cpu_ram_efficient_loading", "--fsdp_cpu_ram_efficient_loading"),
                    Map.entry("fsdp_forward_prefetch", "--fsdp_forward_prefetch"),
                    Map.entry("fsdp_activation_checkpointing", "--gradient_checkpointing"),
                    Map.entry("fsdp_reshard_after_forward", ""),
                    Map.entry("fsdp_auto_wrap_policy", ""),
                    Map.entry("fsdp_min_num_params", ""),
                    Map.entry("fsdp_version", ""));

    private final List<String> arguments = new ArrayList<>();
    private final List<String> notes = new ArrayList<>();

    private AccelerateConfig() {}

    /**
     * Reads a config file.
     *
     * @param file the YAML file
     * @param worldSize the ranks of this job, checked against {@code num_processes}
     * @return the translated settings
     * @throws IOException if the file cannot be read
     * @throws IllegalArgumentException naming the key and the fix, for a bad file
     */
    public static AccelerateConfig load(Path file, int worldSize) throws IOException {
        Object root;
        try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            root = new Yaml(new SafeConstructor(new LoaderOptions())).load(reader);
        } catch (YAMLException e) {
            throw new IllegalArgumentException(
                    "--config_file " + file + " is not valid YAML: " + e.getMessage());
        }
        if (!(root instanceof Map<?, ?> top)) {
            throw new IllegalArgumentException(
                    "--config_file " + file + " is not a YAML mapping of Accelerate's keys");
        }
        AccelerateConfig config = new AccelerateConfig();
        config.readTop(file, top, worldSize);
        return config;
    }

    /** Returns the finetune flags the file stands for (the command line's own come after). */
    public List<String> getArguments() {
        return arguments;
    }

    /** Returns what the file asks that does not apply here, one line each. */
    public List<String> getNotes() {
        return notes;
    }

    private void readTop(Path file, Map<?, ?> top, int worldSize) {
        Set<String> ignored = new TreeSet<>();
        for (Map.Entry<?, ?> entry : top.entrySet()) {
            String key = String.valueOf(entry.getKey());
            Object value = entry.getValue();
            requireKnown(file, key, TOP_KEYS, "");
            if (LAUNCHER_KEYS.contains(key)) {
                ignored.add(key);
            } else if (key.equals("distributed_type") && !"FSDP".equals(String.valueOf(value))) {
                notes.add("distributed_type " + value + ": the ranks train with FSDP regardless");
            } else if (key.equals("mixed_precision")) {
                String precision = String.valueOf(value);
                if (!precision.equals("no")) {
                    arguments.addAll(
                            List.of(precision.equals("fp16") ? "--fp16" : "--bf16", "true"));
                }
            } else if (key.equals("num_processes")) {
                int wanted = Integer.parseInt(String.valueOf(value));
                if (wanted != worldSize) {
                    notes.add(
                            "num_processes "
                                    + wanted
                                    + ": this job has "
                                    + worldSize
                                    + " ranks (bin/fsdp launch --nproc-per-node sets them)");
                }
            } else if (key.equals("fsdp_config") && value != null) {
                if (!(value instanceof Map<?, ?> fsdp)) {
                    throw new IllegalArgumentException(
                            "--config_file " + file + ": fsdp_config must be a mapping");
                }
                readFsdp(file, fsdp);
            }
        }
        if (!ignored.isEmpty()) {
            notes.add(
                    "config keys for Accelerate's launcher, with no meaning to the ranks (bin/fsdp"
                            + " launch sets the job's shape): "
                            + String.join(", ", ignored));
        }
    }

    private void readFsdp(Path file, Map<?, ?> fsdp) {
        for (Map.Entry<?, ?> entry : fsdp.entrySet()) {
            String key = String.valueOf(entry.getKey());
            requireKnown(file, key, FSDP_FLAGS.keySet(), "fsdp_config.");
            String value = flagValue(entry.getValue());
            String flag = FSDP_FLAGS.get(key);
            if (!flag.isEmpty()) {
                arguments.addAll(List.of(flag, value));
            } else if (key.equals("fsdp_reshard_after_forward")) {
                String strategy =
                        value.equalsIgnoreCase("true")
                                ? "FULL_SHARD"
                                : value.equalsIgnoreCase("false") ? "SHARD_GRAD_OP" : value;
                arguments.addAll(List.of("--sharding_strategy", strategy));
            } else if (key.equals("fsdp_auto_wrap_policy")
                    && !value.equals("TRANSFORMER_BASED_WRAP")) {
                notes.add(
                        "fsdp_auto_wrap_policy "
                                + value
                                + ": units are the decoder layers"
                                + " (fsdp_transformer_layer_cls_to_wrap)");
            } else if (key.equals("fsdp_version") && !List.of("1", "2").contains(value)) {
                throw new IllegalArgumentException(
                        "--config_file " + file + ": fsdp_version " + value + " is not 1 or 2");
            }
        }
    }

    private static String flagValue(Object value) {
        if (value instanceof Collection<?> list) {
            List<String> items = new ArrayList<>();
            list.forEach(item -> items.add(String.valueOf(item)));
            return String.join(",", items);
        }
        return String.valueOf(value);
    }

    private static void requireKnown(Path file, String key, Set<String> known, String prefix) {
        if (known.contains(key)) {
            return;
        }
        String nearest = null;
        int best = Integer.MAX_VALUE;
        for (String candidate : new TreeSet<>(known)) {
            int distance = distance(key, candidate);
            if (distance < best) {
                best = distance;
                nearest = candidate;
            }
        }
        throw new IllegalArgumentException(
                "--config_file "
                        + file
                        + ": unknown key "
                        + prefix
                        + key
                        + "; did you mean "
                        + prefix
                        + nearest
                        + "? (fix or remove the key)");
    }

    /** Levenshtein distance. */
    private static int distance(String a, String b) {
        int[] previous = new int[b.length() + 1];
        int[] current = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            previous[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            current[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int substitution = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                current[j] = Math.min(substitution, Math.min(previous[j], current[j - 1]) + 1);
            }
            int[] swap = previous;
            previous = current;
            current = swap;
        }
        return previous[b.length()];
    }

    private static Set<String> union(Set<String> a, Set<String> b) {
        Set<String> all = new TreeSet<>(a);
        all.addAll(b);
        return all;
    }
}
