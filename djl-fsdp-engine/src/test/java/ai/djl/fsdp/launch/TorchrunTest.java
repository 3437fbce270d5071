package ai.djl.fsdp.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.dist.socket.FailureMain;
import ai.djl.fsdp.testing.RankProcesses;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two ranks started by a real torchrun ({@code python3 -m torch.distributed.run --no_python}),
 * which hosts PyTorch's TCPStore in its agent and sets {@code TORCHELASTIC_USE_AGENT_STORE=True}:
 * the ranks must rendezvous through that store and all-reduce. Runs where {@code /usr/bin/python3}
 * can import torch (Debian's {@code python3-torch}); skips with the reason elsewhere.
 */
class TorchrunTest {

    private static final String PYTHON = "/usr/bin/python3";

    @Test
    void ranksRendezvousThroughTheAgentsStore(@TempDir Path directory) throws Exception {
        String missing = torchrunMissing();
        assumeTrue(missing == null, missing);
        int port;
        try (ServerSocket free = new ServerSocket(0)) {
            port = free.getLocalPort();
        }
        Path log = directory.resolve("torchrun.log");
        ProcessBuilder builder =
                new ProcessBuilder(
                        PYTHON,
                        "-m",
                        "torch.distributed.run",
                        "--nproc_per_node",
                        "2",
                        "--master_addr",
                        "127.0.0.1",
                        "--master_port",
                        Integer.toString(port),
                        // torch 1.13 on Python 3.11 cannot parse the default '--redirects 0'.
                        "--redirects",
                        "1",
                        "--tee",
                        "1",
                        "--no_python",
                        Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
                        "-Xmx256m",
                        "-Dai.djl.pytorch.num_threads=1",
                        "-Dai.djl.pytorch.num_interop_threads=1",
                        "-cp",
                        RankProcesses.classPath(),
                        FailureMain.class.getName(),
                        "steady");
        builder.environment().put(ProcessGroupOptions.TIMEOUT_VARIABLE, "20");
        builder.redirectErrorStream(true).redirectOutput(log.toFile());
        Process torchrun = builder.start();
        try {
            assertTrue(torchrun.waitFor(120, TimeUnit.SECONDS), "torchrun did not finish");
            String output = Files.readString(log, StandardCharsets.UTF_8);
            assertEquals(0, torchrun.exitValue(), output);
            // Each of 40 steps all-reduces ten elements of (rank + 1) * step over ranks 0 and 1.
            for (int rank = 0; rank < 2; rank++) {
                assertTrue(
                        output.contains("[default" + rank + "]:RESULT 24600.0"),
                        "rank " + rank + " did not finish:\n" + output);
            }
        } finally {
            torchrun.descendants().forEach(ProcessHandle::destroyForcibly);
            torchrun.destroyForcibly();
        }
    }

    /** Returns why torchrun cannot run here, or null when it can. */
    static String torchrunMissing() throws InterruptedException {
        if (!Files.isExecutable(Paths.get(PYTHON))) {
            return PYTHON + " is not installed";
        }
        try {
            Process probe =
                    new ProcessBuilder(List.of(PYTHON, "-c", "import torch.distributed.run"))
                            .redirectErrorStream(true)
                            .start();
            if (!probe.waitFor(60, TimeUnit.SECONDS)) {
                probe.destroyForcibly();
                return "importing torch took over a minute";
            }
            return probe.exitValue() == 0
                    ? null
                    : PYTHON + " cannot import torch (apt-get install python3-torch)";
        } catch (IOException e) {
            return PYTHON + " does not run: " + e.getMessage();
        }
    }
}
