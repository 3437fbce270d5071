package ai.djl.fsdp.zoo.finetune.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Accelerate's config files as {@code accelerate config} writes them, FSDP 1 and 2 spellings. */
public class AccelerateConfigTest {

    /** As Accelerate writes an FSDP (version 1) config, with the old key spellings. */
    public static final String OLD =
            String.join(
                    "\n",
                    "compute_environment: LOCAL_MACHINE",
                    "debug: false",
                    "distributed_type: FSDP",
                    "downcast_bf16: 'no'",
                    "fsdp_config:",
                    "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP",
                    "  fsdp_backward_prefetch_policy: BACKWARD_PRE",
                    "  fsdp_forward_prefetch: false",
                    "  fsdp_cpu_ram_efficient_loading: true",
                    "  fsdp_offload_params: false",
                    "  fsdp_sharding_strategy: 1",
                    "  fsdp_state_dict_type: SHARDED_STATE_DICT",
                    "  fsdp_sync_module_states: true",
                    "  fsdp_transformer_layer_cls_to_wrap: GPT2Block",
                    "  fsdp_use_orig_params: false",
                    "machine_rank: 0",
                    "main_training_function: main",
                    "mixed_precision: bf16",
                    "num_machines: 1",
                    "num_processes: 2",
                    "rdzv_backend: static",
                    "same_network: true",
                    "tpu_env: []",
                    "tpu_use_cluster: false",
                    "tpu_use_sudo: false",
                    "use_cpu: false",
                    "");

    /** FSDP 2's spellings. */
    static final String NEW =
            String.join(
                    "\n",
                    "compute_environment: LOCAL_MACHINE",
                    "distributed_type: FSDP",
                    "fsdp_config:",
                    "  fsdp_version: 2",
                    "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP",
                    "  fsdp_transformer_layer_cls_to_wrap: [LlamaDecoderLayer]",
                    "  fsdp_reshard_after_forward: false",
                    "  fsdp_backward_prefetch: NO_PREFETCH",
                    "  fsdp_state_dict_type: FULL_STATE_DICT",
                    "  fsdp_activation_checkpointing: false",
                    "  fsdp_cpu_ram_efficient_loading: false",
                    "mixed_precision: 'no'",
                    "num_processes: 4",
                    "main_process_ip: 10.0.0.1",
                    "main_process_port: 29500",
                    "gpu_ids: all",
                    "");

    @Test
    void oldSpellingsBecomeFlags(@TempDir Path directory) throws Exception {
        Path file = Files.writeString(directory.resolve("fsdp_config.yaml"), OLD);
        AccelerateConfig config = AccelerateConfig.load(file, 2);
        String flags = String.join(" ", config.getArguments());
        assertTrue(flags.contains("--sharding_strategy 1"), flags);
        assertTrue(flags.contains("--fsdp_backward_prefetch BACKWARD_PRE"), flags);
        assertTrue(flags.contains("--fsdp_transformer_layer_cls_to_wrap GPT2Block"), flags);
        assertTrue(flags.contains("--fsdp_sync_module_states true"), flags);
        assertTrue(flags.contains("--fsdp_state_dict_type SHARDED_STATE_DICT"), flags);
        assertTrue(flags.contains("--bf16 true"), flags);
        assertEquals(1, config.getNotes().size(), config.getNotes().toString());
        assertTrue(config.getNotes().get(0).contains("machine_rank"), config.getNotes().get(0));
    }

    @Test
    void newSpellingsBecomeFlags(@TempDir Path directory) throws Exception {
        Path file = Files.writeString(directory.resolve("fsdp2.yaml"), NEW);
        AccelerateConfig config = AccelerateConfig.load(file, 2);
        List<String> flags = config.getArguments();
        String joined = String.join(" ", flags);
        assertTrue(joined.contains("--sharding_strategy SHARD_GRAD_OP"), joined);
        assertTrue(joined.contains("--fsdp_backward_prefetch NO_PREFETCH"), joined);
        assertTrue(joined.contains("--fsdp_transformer_layer_cls_to_wrap LlamaDecoderLayer"));
        assertTrue(joined.contains("--gradient_checkpointing false"), joined);
        assertTrue(
                config.getNotes().stream().anyMatch(n -> n.contains("num_processes 4")),
                config.getNotes().toString());
    }

    @Test
    void unknownKeysNameTheNearestKnownOne(@TempDir Path directory) throws Exception {
        Path typo =
                Files.writeString(
                        directory.resolve("typo.yaml"),
                        OLD.replace("fsdp_sharding_strategy", "fsdp_sharding_stratgy"));
        IllegalArgumentException error =
                assertThrows(IllegalArgumentException.class, () -> AccelerateConfig.load(typo, 2));
        assertTrue(
                error.getMessage().contains("unknown key fsdp_config.fsdp_sharding_stratgy")
                        && error.getMessage().contains("fsdp_config.fsdp_sharding_strategy"),
                error.getMessage());
        Path top = Files.writeString(directory.resolve("top.yaml"), "num_proceses: 2\n");
        error = assertThrows(IllegalArgumentException.class, () -> AccelerateConfig.load(top, 2));
        assertTrue(error.getMessage().contains("did you mean num_processes"), error.getMessage());
        Path broken = Files.writeString(directory.resolve("broken.yaml"), "a: [b\n");
        error =
                assertThrows(
                        IllegalArgumentException.class, () -> AccelerateConfig.load(broken, 2));
        assertTrue(error.getMessage().contains("not valid YAML"), error.getMessage());
    }
}
