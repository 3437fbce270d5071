package ai.djl.fsdp.zoo.finetune.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.launch.AccelerateLaunchConfig;
import ai.djl.fsdp.trainer.CommunicationQuantization;
import ai.djl.fsdp.zoo.finetune.FinetuneCommand;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.IDefaultValueProvider;

/**
 * finetune's settings from Accelerate's variables (as the launcher sets them) and from a config
 * file given to finetune itself (as {@code accelerate config} writes it, FSDP 1 and 2 spellings),
 * through the same variables; flags win.
 */
public class AccelerateDefaultsTest {

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

    /** Variables as bin/fsdp launch (or accelerate launch) sets them for an FSDP 1 file. */
    private static final Map<String, String> VARIABLES =
            Map.of(
                    "ACCELERATE_USE_FSDP", "true",
                    "ACCELERATE_MIXED_PRECISION", "bf16",
                    "FSDP_VERSION", "1",
                    "FSDP_SHARDING_STRATEGY", "2",
                    "FSDP_TRANSFORMER_CLS_TO_WRAP", "GPT2Block",
                    "FSDP_BACKWARD_PREFETCH", "NO_PREFETCH",
                    "FSDP_SYNC_MODULE_STATES", "false",
                    "FSDP_ACTIVATION_CHECKPOINTING", "true",
                    "FSDP_CPU_RAM_EFFICIENT_LOADING", "false");

    /** Parses finetune's command line with these defaults; returns the settings it reached. */
    private static Map<String, Object> settings(IDefaultValueProvider defaults, String... args) {
        CommandLine line = new CommandLine(new FinetuneCommand());
        line.setDefaultValueProvider(defaults);
        List<String> all = new ArrayList<>(List.of("--output_dir", "out"));
        all.addAll(List.of(args));
        line.parseArgs(all.toArray(new String[0]));
        Map<String, Object> settings = new TreeMap<>();
        for (String name :
                List.of(
                        "--sharding_strategy",
                        "--fsdp_transformer_layer_cls_to_wrap",
                        "--fsdp_backward_prefetch",
                        "--fsdp_sync_module_states",
                        "--fsdp_cpu_ram_efficient_loading",
                        "--fsdp_use_orig_params",
                        "--fsdp_state_dict_type",
                        "--fsdp_auto_wrap_policy",
                        "--gradient_checkpointing",
                        "--bf16",
                        "--fp16")) {
            Object value = line.getCommandSpec().findOption(name).getValue();
            settings.put(name, value == null ? null : String.valueOf(value));
        }
        return settings;
    }

    @Test
    void acceleratesVariablesAreFinetunesDefaults() {
        Map<String, Object> settings = settings(new AccelerateDefaults(VARIABLES));
        assertEquals("2", settings.get("--sharding_strategy"));
        assertEquals("[GPT2Block]", settings.get("--fsdp_transformer_layer_cls_to_wrap"));
        assertEquals("NO_PREFETCH", settings.get("--fsdp_backward_prefetch"));
        assertEquals("false", settings.get("--fsdp_sync_module_states"));
        assertEquals("false", settings.get("--fsdp_cpu_ram_efficient_loading"));
        assertEquals("true", settings.get("--gradient_checkpointing"));
        assertEquals("true", settings.get("--bf16"));
        assertEquals("false", settings.get("--fp16"));

        Map<String, Object> plain = settings(new AccelerateDefaults(Map.of()));
        assertEquals("FULL_SHARD", plain.get("--sharding_strategy"), "finetune's own default");
        assertEquals("false", plain.get("--bf16"));
        assertEquals("true", plain.get("--fsdp_sync_module_states"));
        assertEquals(null, plain.get("--gradient_checkpointing"), "the trainer's default");

        Map<String, String> notFsdp = new HashMap<>(VARIABLES);
        notFsdp.remove("ACCELERATE_USE_FSDP");
        AccelerateDefaults multiGpu = new AccelerateDefaults(notFsdp);
        assertEquals("FULL_SHARD", settings(multiGpu).get("--sharding_strategy"));
        assertTrue(multiGpu.notes().get(0).contains("ACCELERATE_USE_FSDP is not true"));
    }

    @Test
    void flagsOnTheCommandLineWinOverTheVariables() {
        Map<String, Object> settings =
                settings(
                        new AccelerateDefaults(VARIABLES),
                        "--sharding_strategy",
                        "NO_SHARD",
                        "--fsdp_transformer_layer_cls_to_wrap",
                        "LlamaDecoderLayer",
                        "--fsdp_sync_module_states",
                        "--gradient_checkpointing",
                        "False",
                        "--bf16",
                        "False");
        assertEquals("NO_SHARD", settings.get("--sharding_strategy"));
        assertEquals("[LlamaDecoderLayer]", settings.get("--fsdp_transformer_layer_cls_to_wrap"));
        assertEquals("true", settings.get("--fsdp_sync_module_states"));
        assertEquals("false", settings.get("--gradient_checkpointing"));
        assertEquals("false", settings.get("--bf16"));
        assertEquals("NO_PREFETCH", settings.get("--fsdp_backward_prefetch"), "not given: kept");
    }

    @Test
    void communicationQuantizationComesFromTheConfigFilesKeyOrTheFlag(@TempDir Path directory)
            throws Exception {
        Path file =
                Files.writeString(
                        directory.resolve("quantized.yaml"),
                        NEW.replace(
                                "fsdp_config:\n",
                                "fsdp_config:\n  fsdp_communication_quantization:"
                                        + " weights=int8,gradients=int4\n"));
        Map<String, String> launched = AccelerateLaunchConfig.read(file).getEnvironment();
        assertEquals(
                "weights=int8,gradients=int4", launched.get("FSDP_COMMUNICATION_QUANTIZATION"));
        FinetuneCommand command = new FinetuneCommand();
        CommandLine line = new CommandLine(command);
        line.setDefaultValueProvider(new AccelerateDefaults(launched));
        line.parseArgs("--output_dir", "out");
        assertEquals(
                "weights=int8,gradients=int4,block=64",
                line.getCommandSpec()
                        .findOption("--fsdp_communication_quantization")
                        .getValue()
                        .toString()
                        .transform(CommunicationQuantization::parse)
                        .toString());
        line = new CommandLine(new FinetuneCommand());
        line.setDefaultValueProvider(new AccelerateDefaults(launched));
        line.parseArgs("--output_dir", "out", "--communication_quantization", "none");
        assertEquals(
                "none",
                line.getCommandSpec().findOption("--fsdp_communication_quantization").getValue());
        line = new CommandLine(new FinetuneCommand());
        line.parseArgs("--output_dir", "out");
        assertEquals(
                "none",
                line.getCommandSpec().findOption("--fsdp_communication_quantization").getValue(),
                "off by default");
    }

    @Test
    void fsdp2ReshardsAfterForwardOrNot() {
        Map<String, String> fsdp2 = new HashMap<>(VARIABLES);
        fsdp2.put("FSDP_VERSION", "2");
        fsdp2.put("FSDP_RESHARD_AFTER_FORWARD", "false");
        assertEquals(
                "SHARD_GRAD_OP",
                settings(new AccelerateDefaults(fsdp2)).get("--sharding_strategy"));
        fsdp2.put("FSDP_RESHARD_AFTER_FORWARD", "true");
        assertEquals(
                "FULL_SHARD", settings(new AccelerateDefaults(fsdp2)).get("--sharding_strategy"));
    }

    /** finetune --config_file reaches what a launch with the file's variables reaches. */
    @Test
    void aConfigFileReachesTheSameSettingsAsTheLaunchersVariables(@TempDir Path directory)
            throws Exception {
        for (String text : List.of(OLD, NEW)) {
            Path file = Files.writeString(directory.resolve("fsdp_config.yaml"), text);
            Map<String, String> launched = AccelerateLaunchConfig.read(file).getEnvironment();
            assertEquals(
                    settings(new AccelerateDefaults(launched)),
                    settings(AccelerateDefaults.ofFile(file, Map.of(), 2)));
        }
        Path old = Files.writeString(directory.resolve("old.yaml"), OLD);
        Map<String, Object> settings = settings(AccelerateDefaults.ofFile(old, Map.of(), 2));
        assertEquals("1", settings.get("--sharding_strategy"));
        assertEquals("BACKWARD_PRE", settings.get("--fsdp_backward_prefetch"), "old spelling");
        assertEquals("[GPT2Block]", settings.get("--fsdp_transformer_layer_cls_to_wrap"));
        assertEquals("SHARDED_STATE_DICT", settings.get("--fsdp_state_dict_type"));
        assertEquals("true", settings.get("--bf16"));
        List<String> notes = AccelerateDefaults.ofFile(old, Map.of(), 2).notes();
        assertEquals(1, notes.size(), notes.toString());
        assertTrue(
                notes.get(0).contains("compute_environment, debug, downcast_bf16"), notes.get(0));

        Path fsdp2 = Files.writeString(directory.resolve("new.yaml"), NEW);
        settings = settings(AccelerateDefaults.ofFile(fsdp2, Map.of(), 2));
        assertEquals("SHARD_GRAD_OP", settings.get("--sharding_strategy"));
        assertEquals("NO_PREFETCH", settings.get("--fsdp_backward_prefetch"));
        assertEquals("[LlamaDecoderLayer]", settings.get("--fsdp_transformer_layer_cls_to_wrap"));
        assertEquals("false", settings.get("--gradient_checkpointing"));
        assertEquals("false", settings.get("--bf16"));
        assertTrue(
                AccelerateDefaults.ofFile(fsdp2, Map.of(), 2).notes().stream()
                        .anyMatch(n -> n.contains("num_processes 4")));
    }

    @Test
    void unknownKeysNameTheNearestKnownOne(@TempDir Path directory) throws Exception {
        Path typo =
                Files.writeString(
                        directory.resolve("typo.yaml"),
                        OLD.replace("fsdp_sharding_strategy", "fsdp_sharding_stratgy"));
        IllegalArgumentException error =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> AccelerateDefaults.ofFile(typo, Map.of(), 2));
        assertTrue(
                error.getMessage().contains("unknown key fsdp_config.fsdp_sharding_stratgy")
                        && error.getMessage().contains("fsdp_config.fsdp_sharding_strategy"),
                error.getMessage());
        Path top = Files.writeString(directory.resolve("top.yaml"), "num_proceses: 2\n");
        error =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> AccelerateDefaults.ofFile(top, Map.of(), 2));
        assertTrue(error.getMessage().contains("did you mean num_processes"), error.getMessage());
        Path broken = Files.writeString(directory.resolve("broken.yaml"), "a: [b\n");
        error =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> AccelerateDefaults.ofFile(broken, Map.of(), 2));
        assertTrue(error.getMessage().contains("cannot be read as YAML"), error.getMessage());
    }
}
