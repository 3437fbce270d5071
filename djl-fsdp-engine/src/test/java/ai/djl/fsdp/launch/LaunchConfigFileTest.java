package ai.djl.fsdp.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.cli.Fsdp;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code bin/fsdp launch --config_file}: Accelerate's file sets the job's shape (a real launch of
 * two rank JVMs from {@code num_processes: 2}) and reaches the ranks as {@code accelerate launch}
 * passes it, as Accelerate's variables; bad files, keys and values are one usage error naming the
 * file and key.
 */
class LaunchConfigFileTest {

    /** A file as {@code accelerate config} writes it for FSDP on one machine. */
    private static final String ACCELERATE_FILE =
            String.join(
                    "\n",
                    "compute_environment: LOCAL_MACHINE",
                    "debug: false",
                    "distributed_type: FSDP",
                    "downcast_bf16: 'no'",
                    "fsdp_config:",
                    "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP",
                    "  fsdp_backward_prefetch_policy: BACKWARD_POST",
                    "  fsdp_cpu_ram_efficient_loading: true",
                    "  fsdp_sharding_strategy: 2",
                    "  fsdp_sync_module_states: true",
                    "  fsdp_transformer_layer_cls_to_wrap: [GPT2Block, LlamaDecoderLayer]",
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
                    "use_cpu: true",
                    "");

    private final StringWriter err = new StringWriter();
    private final StringWriter out = new StringWriter();

    @Test
    @Timeout(180)
    void numProcessesStartsTheRanksWithAcceleratesVariables(@TempDir Path directory)
            throws IOException {
        Path file = directory.resolve("fsdp_config.yaml");
        Files.writeString(file, ACCELERATE_FILE);
        Path logs = Files.createDirectory(directory.resolve("logs"));
        int code =
                run(
                        "launch",
                        "--config_file",
                        file.toString(),
                        "--log-dir",
                        logs.toString(),
                        "--jvm-opt=-Xmx64m",
                        "--",
                        "config-file-probe",
                        "--",
                        "--seed",
                        "100");
        assertEquals(0, code, err.toString());
        for (int rank = 0; rank < 2; rank++) {
            Map<String, String> report = report(logs.resolve("rank" + rank + ".log"));
            assertEquals(String.valueOf(rank), report.get("RANK"));
            assertEquals("2", report.get("WORLD_SIZE"));
            assertEquals("2", report.get("LOCAL_WORLD_SIZE"));
            assertEquals("null", report.get("config_file"), "the settings come as variables");
            assertEquals("--seed 100", report.get("args"));
            Map<String, String> expected = new HashMap<>();
            expected.put("ACCELERATE_USE_FSDP", "true");
            expected.put("ACCELERATE_MIXED_PRECISION", "bf16");
            expected.put("FSDP_VERSION", "1");
            expected.put("FSDP_SHARDING_STRATEGY", "2");
            expected.put("FSDP_RESHARD_AFTER_FORWARD", "true");
            expected.put("FSDP_AUTO_WRAP_POLICY", "TRANSFORMER_BASED_WRAP");
            expected.put("FSDP_TRANSFORMER_CLS_TO_WRAP", "GPT2Block,LlamaDecoderLayer");
            expected.put("FSDP_BACKWARD_PREFETCH", "BACKWARD_POST");
            expected.put("FSDP_MIN_NUM_PARAMS", "100000000");
            expected.put("FSDP_OFFLOAD_PARAMS", "false");
            expected.put("FSDP_FORWARD_PREFETCH", "false");
            expected.put("FSDP_USE_ORIG_PARAMS", "false");
            expected.put("FSDP_CPU_RAM_EFFICIENT_LOADING", "true");
            expected.put("FSDP_SYNC_MODULE_STATES", "true");
            expected.put("FSDP_ACTIVATION_CHECKPOINTING", "false");
            Map<String, String> accelerate = new HashMap<>(report);
            accelerate
                    .keySet()
                    .removeIf(k -> !k.startsWith("ACCELERATE_") && !k.startsWith("FSDP_"));
            assertEquals(expected, accelerate, "rank " + rank);
        }
        assertTrue(
                out.toString().contains("note: config keys for Accelerate's other"),
                out.toString());
        assertTrue(out.toString().contains("compute_environment, debug, downcast_bf16"));
    }

    @Test
    @Timeout(180)
    void flagsWinOverTheFile(@TempDir Path directory) throws IOException {
        Path file = directory.resolve("fsdp_config.yaml");
        Files.writeString(file, ACCELERATE_FILE.replace("num_processes: 2", "num_processes: 8"));
        Files.writeString(file, "main_process_port: 1\n", StandardOpenOption.APPEND);
        Path logs = Files.createDirectory(directory.resolve("logs"));
        int code =
                run(
                        "launch",
                        "--config_file",
                        file.toString(),
                        "--nproc-per-node",
                        "1",
                        "--master-port",
                        String.valueOf(freePort()),
                        "--log-dir",
                        logs.toString(),
                        "--jvm-opt=-Xmx64m",
                        "--",
                        "config-file-probe",
                        "--config_file",
                        "other.yaml");
        assertEquals(0, code, err.toString());
        Map<String, String> report = report(logs.resolve("rank0.log"));
        assertEquals("1", report.get("WORLD_SIZE"));
        assertEquals("other.yaml", report.get("config_file"), "the command's own file is kept");
    }

    @Test
    @Timeout(180)
    void acceleratesOwnFlagsWinOverTheFile(@TempDir Path directory) throws IOException {
        Path file = directory.resolve("fsdp_config.yaml");
        Files.writeString(file, ACCELERATE_FILE.replace("num_processes: 2", "num_processes: 8"));
        Path logs = Files.createDirectory(directory.resolve("logs"));
        int code =
                run(
                        "launch",
                        "--config_file",
                        file.toString(),
                        "--num_processes",
                        "2",
                        "--main_process_port",
                        String.valueOf(freePort()),
                        "--mixed_precision",
                        "fp16",
                        "--fsdp_sharding_strategy",
                        "FULL_SHARD",
                        "--fsdp-use-orig-params",
                        "True",
                        "--log-dir",
                        logs.toString(),
                        "--jvm-opt=-Xmx64m",
                        "--",
                        "config-file-probe");
        assertEquals(0, code, err.toString());
        for (int rank = 0; rank < 2; rank++) {
            Map<String, String> report = report(logs.resolve("rank" + rank + ".log"));
            assertEquals("2", report.get("WORLD_SIZE"), "--num_processes over the file's 8");
            assertEquals("fp16", report.get("ACCELERATE_MIXED_PRECISION"));
            assertEquals("FULL_SHARD", report.get("FSDP_SHARDING_STRATEGY"));
            assertEquals("true", report.get("FSDP_USE_ORIG_PARAMS"));
            assertEquals("GPT2Block,LlamaDecoderLayer", report.get("FSDP_TRANSFORMER_CLS_TO_WRAP"));
        }

        Path alone = Files.createDirectory(directory.resolve("alone"));
        code =
                run(
                        "launch",
                        "--num_processes",
                        "1",
                        "--use_fsdp",
                        "--threads-per-rank",
                        "1",
                        "--fsdp_sharding_strategy",
                        "SHARD_GRAD_OP",
                        "--log-dir",
                        alone.toString(),
                        "--jvm-opt=-Xmx64m",
                        "--",
                        "config-file-probe");
        assertEquals(0, code, err.toString());
        Map<String, String> report = report(alone.resolve("rank0.log"));
        assertEquals("1", report.get("WORLD_SIZE"), "the flags alone, without a file");
        assertEquals("true", report.get("ACCELERATE_USE_FSDP"));
        assertEquals("SHARD_GRAD_OP", report.get("FSDP_SHARDING_STRATEGY"));
        assertEquals("no", report.get("ACCELERATE_MIXED_PRECISION"));

        assertFalse(out.toString().contains("intra-op"), "1 rank of 1 thread fits: " + out);

        Path oversubscribed = Files.createDirectory(directory.resolve("oversubscribed"));
        code =
                run(
                        "launch",
                        "--num_processes",
                        "1",
                        "--threads-per-rank",
                        "100000",
                        "--log-dir",
                        oversubscribed.toString(),
                        "--jvm-opt=-Xmx64m",
                        "--",
                        "config-file-probe");
        assertEquals(0, code, err.toString());
        assertTrue(
                out.toString()
                        .contains(
                                "fsdp launch: 1 rank x 100000 intra-op threads"
                                        + " (--threads-per-rank) exceed the"),
                out.toString());
        report = report(oversubscribed.resolve("rank0.log"));
        assertEquals("100000", report.get("OMP_NUM_THREADS"));
        assertEquals("100000", report.get("num_threads"));

        assertEquals(
                2, run("launch", "--num_processes", "2", "--mixed_precision", "fp32", "--", "x.Y"));
        assertTrue(
                err.toString().contains("--mixed_precision 'fp32' is not one of no, fp16"),
                err.toString());
        assertEquals(
                2,
                run(
                        "launch",
                        "--config_file",
                        file.toString(),
                        "--fsdp_sync_module_states",
                        "false",
                        "--",
                        "x.Y"));
        assertTrue(
                err.toString()
                        .contains(
                                "--config_file "
                                        + file
                                        + ": fsdp_config.fsdp_cpu_ram_efficient_loading true"
                                        + " needs"),
                err.toString());
    }

    @Test
    void badFilesAreOneUsageErrorNamingTheFileAndKey(@TempDir Path directory) throws IOException {
        Path missing = directory.resolve("missing.yaml");
        assertEquals(
                2, run("launch", "--config_file", missing.toString(), "--", "x.Y"), err.toString());
        assertTrue(err.toString().contains(missing + " does not exist"), err.toString());

        Path words = directory.resolve("words.yaml");
        Files.writeString(words, "num_processes: two\n");
        assertEquals(2, run("launch", "--config_file", words.toString(), "--", "x.Y"));
        assertTrue(err.toString().contains("num_processes must be an integer"), err.toString());

        Path uneven = directory.resolve("uneven.yaml");
        Files.writeString(uneven, "num_processes: 3\nnum_machines: 2\n");
        assertEquals(2, run("launch", "--config_file", uneven.toString(), "--", "x.Y"));
        assertTrue(err.toString().contains("a multiple of it"), err.toString());

        Path broken = directory.resolve("broken.yaml");
        Files.writeString(broken, "num_processes: [2\n");
        assertEquals(2, run("launch", "--config_file", broken.toString(), "--", "x.Y"));
        assertTrue(err.toString().contains("cannot be read as YAML"), err.toString());

        assertEquals(2, run("launch", "--", "x.Y"));
        assertTrue(err.toString().contains("Missing --nproc-per-node"), err.toString());

        Path typo = directory.resolve("typo.yaml");
        Files.writeString(typo, "num_processes: 2\nfsdp_config:\n  fsdp_sharding_stratgy: 1\n");
        assertEquals(2, run("launch", "--config_file", typo.toString(), "--", "x.Y"));
        assertTrue(
                err.toString()
                        .contains(
                                "unknown key fsdp_config.fsdp_sharding_stratgy; did you mean"
                                        + " fsdp_config.fsdp_sharding_strategy?"),
                err.toString());

        Path precision = directory.resolve("precision.yaml");
        Files.writeString(precision, "num_processes: 2\nmixed_precision: fp32\n");
        assertEquals(2, run("launch", "--config_file", precision.toString(), "--", "x.Y"));
        assertTrue(
                err.toString().contains("mixed_precision 'fp32' is not one of no, fp16"),
                err.toString());

        Path loading = directory.resolve("loading.yaml");
        Files.writeString(
                loading,
                "num_processes: 2\ndistributed_type: FSDP\nfsdp_config:\n"
                        + "  fsdp_sync_module_states: false\n");
        assertEquals(2, run("launch", "--config_file", loading.toString(), "--", "x.Y"));
        assertTrue(
                err.toString().contains("fsdp_cpu_ram_efficient_loading true needs"),
                err.toString());
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    private int run(String... args) {
        CommandLine fsdp = Fsdp.commandLine();
        fsdp.setErr(new PrintWriter(err, true));
        fsdp.setOut(new PrintWriter(out, true));
        return fsdp.execute(args);
    }

    private static Map<String, String> report(Path log) throws IOException {
        Map<String, String> report = new HashMap<>();
        for (String line : Files.readAllLines(log)) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                report.put(line.substring(0, eq), line.substring(eq + 1));
            }
        }
        return report;
    }
}
