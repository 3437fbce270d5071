package ai.djl.fsdp.launch;

import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;

/**
 * The keys of Accelerate's config file, as {@code accelerate config} writes them in its old and new
 * spellings: those the launcher reads, those that become the ranks' variables, and those with no
 * meaning here. Any other key is an error naming the nearest known one.
 */
final class AccelerateKeys {

    /** Top-level keys for Accelerate's other backends and machines: accepted with a note. */
    static final Set<String> WITHOUT_MEANING =
            Set.of(
                    "compute_environment",
                    "debug",
                    "downcast_bf16",
                    "enable_cpu_affinity",
                    "main_training_function",
                    "rdzv_backend",
                    "same_network",
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

    /** Every top-level key. */
    static final Set<String> TOP =
            union(
                    WITHOUT_MEANING,
                    Set.of(
                            "num_processes",
                            "num_machines",
                            "machine_rank",
                            "main_process_ip",
                            "main_process_port",
                            "distributed_type",
                            "mixed_precision",
                            "fsdp_config"));

    /**
     * The keys of {@code fsdp_config}: Accelerate's, and this project's {@code
     * fsdp_communication_quantization} (see {@code CommunicationQuantization.parse}).
     */
    static final Set<String> FSDP =
            Set.of(
                    "fsdp_version",
                    "fsdp_sharding_strategy",
                    "fsdp_reshard_after_forward",
                    "fsdp_auto_wrap_policy",
                    "fsdp_transformer_layer_cls_to_wrap",
                    "fsdp_min_num_params",
                    "fsdp_backward_prefetch",
                    "fsdp_backward_prefetch_policy",
                    "fsdp_forward_prefetch",
                    "fsdp_offload_params",
                    "fsdp_state_dict_type",
                    "fsdp_sync_module_states",
                    "fsdp_cpu_ram_efficient_loading",
                    "fsdp_use_orig_params",
                    "fsdp_activation_checkpointing",
                    "fsdp_ignored_modules",
                    "fsdp_communication_quantization");

    private AccelerateKeys() {}

    /**
     * Checks that a key is known.
     *
     * @param file the config file, for the message
     * @param key the key
     * @param known the keys valid where it stands
     * @param prefix how the message names its place ({@code fsdp_config.} or empty)
     * @throws IllegalArgumentException naming the key and the nearest known one
     */
    static void requireKnown(Path file, String key, Set<String> known, String prefix) {
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
