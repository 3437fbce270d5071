package ai.djl.fsdp.rendezvous;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.dist.socket.FailureMain;
import ai.djl.fsdp.testing.RankProcesses;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * 2,000 strangers connect to a running job's store (rank 0) at once: announcing 4 MiB frames,
 * trickling bytes, sending another protocol, or nothing. Rank 0's resident memory must grow by less
 * than 100 MB, and the job's results must be those of a job left alone.
 */
class HostileClientsTest {

    private static final int CONNECTIONS = 2000;

    /** The total of FailureMain's steady job on 2 ranks: sum over i of 10 * (1 + 2) * i. */
    private static final double EXPECTED = 30.0 * (40 * 41 / 2);

    @Test
    void strangersCostRankZeroLittleMemoryAndChangeNoResult() throws Exception {
        int port;
        try (ServerSocket probe = new ServerSocket(0)) {
            port = probe.getLocalPort();
        }
        try (RankProcesses job =
                RankProcesses.builder(FailureMain.class)
                        .worldSize(2)
                        .args("steady")
                        .masterPort(port)
                        .env(ProcessGroupOptions.TIMEOUT_VARIABLE, "30")
                        .start()) {
            job.awaitOutput(0, "RUNNING", Duration.ofSeconds(90));
            long before = residentBytes(job.pid(0));
            long peak = before;
            List<Socket> sockets = new ArrayList<>();
            try {
                for (int i = 0; i < CONNECTIONS; i++) {
                    Socket socket = new Socket();
                    sockets.add(socket);
                    try {
                        socket.connect(new java.net.InetSocketAddress("127.0.0.1", port), 5000);
                        DataOutputStream out = new DataOutputStream(socket.getOutputStream());
                        switch (i % 4) {
                            case 0:
                                out.writeInt(4 << 20); // a maximal frame, never sent
                                break;
                            case 1:
                                out.writeByte(0); // the first byte of a length, then silence
                                break;
                            case 2:
                                out.write(
                                        "GET / HTTP/1.1\r\n\r\n"
                                                .getBytes(StandardCharsets.US_ASCII));
                                break;
                            default:
                                break; // connected, silent
                        }
                        out.flush();
                    } catch (IOException e) {
                        // refused or reset by the server: what a cap does
                    }
                    if (i % 200 == 0) {
                        peak = Math.max(peak, residentBytes(job.pid(0)));
                    }
                }
                for (int i = 0; i < 20; i++) {
                    peak = Math.max(peak, residentBytes(job.pid(0)));
                    Thread.sleep(100);
                }
            } finally {
                for (Socket socket : sockets) {
                    socket.close();
                }
            }
            RankProcesses.Results results = job.await().assertAllSucceeded();
            System.out.printf(
                    "MEASURED %d hostile store connections: rank 0 resident %.1f MB before, peak"
                            + " %.1f MB (+%.1f MB)%n",
                    CONNECTIONS, before / 1e6, peak / 1e6, (peak - before) / 1e6);
            for (RankProcesses.RankResult rank : results.all()) {
                assertTrue(
                        rank.output().contains("RESULT " + EXPECTED),
                        "results changed:\n" + results.describe());
            }
            assertTrue(
                    peak - before < 100_000_000, "rank 0 grew by " + (peak - before) / 1e6 + " MB");
            assertEquals(2, results.all().size());
        }
    }

    /** Rank 0's resident bytes, or 0 once it has finished its job (it is then not growing). */
    private static long residentBytes(long pid) throws IOException {
        List<String> status;
        try {
            status = Files.readAllLines(Path.of("/proc/" + pid + "/status"));
        } catch (java.nio.file.NoSuchFileException e) {
            return 0;
        }
        for (String line : status) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        // An exited process not yet reaped (a zombie) reports no memory lines.
        return 0;
    }
}
