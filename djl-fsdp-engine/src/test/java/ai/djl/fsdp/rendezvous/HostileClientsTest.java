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
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * 2,000 strangers connect to a running job's store (rank 0) at once: announcing 4 MiB frames,
 * trickling bytes, sending another protocol, or nothing. Rank 0's resident memory must grow by less
 * than 100 MB, and the job's results must be those of a job left alone.
 */
class HostileClientsTest {

    private static final int CONNECTIONS = 2000;

    /** FailureMain's line for each all-reduce of ones on 2 ranks, whose sum is 2.0. */
    private static final Pattern SUM = Pattern.compile("RUNNING ([0-9.]+)");

    @Test
    void strangersCostRankZeroLittleMemoryAndChangeNoResult(@TempDir Path dir) throws Exception {
        Path stop = dir.resolve("stop");
        int port;
        try (ServerSocket probe = new ServerSocket(0)) {
            port = probe.getLocalPort();
        }
        try (RankProcesses job =
                RankProcesses.builder(FailureMain.class)
                        .worldSize(2)
                        .args("until", stop.toString())
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
                // Rank 0 all-reduces until told to stop: every sample above was of it running.
                assertTrue(
                        ProcessHandle.of(job.pid(0)).map(ProcessHandle::isAlive).orElse(false),
                        "rank 0 ended while strangers were connecting");
            } finally {
                for (Socket socket : sockets) {
                    socket.close();
                }
                Files.writeString(stop, "stop");
            }
            RankProcesses.Results results = job.await().assertAllSucceeded();
            System.out.printf(
                    "MEASURED %d hostile store connections: rank 0 resident %.1f MB before, peak"
                            + " %.1f MB (+%.1f MB)%n",
                    CONNECTIONS, before / 1e6, peak / 1e6, (peak - before) / 1e6);
            for (RankProcesses.RankResult rank : results.all()) {
                List<String> sums =
                        SUM.matcher(rank.output())
                                .results()
                                .map(match -> match.group(1))
                                .collect(Collectors.toList());
                assertTrue(sums.size() >= 10, "too few steps:\n" + results.describe());
                assertTrue(
                        sums.stream().allMatch("2.0"::equals),
                        "results changed:\n" + results.describe());
                assertTrue(rank.output().contains("DONE"), results.describe());
            }
            assertTrue(
                    peak - before < 100_000_000, "rank 0 grew by " + (peak - before) / 1e6 + " MB");
            assertEquals(2, results.all().size());
        }
    }

    /** Rank 0's resident bytes, or 0 where it has no memory lines (it has exited). */
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
