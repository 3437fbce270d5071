package ai.djl.fsdp.launch;

import ai.djl.fsdp.dist.DistributedEnv;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.HexFormat;

/**
 * Where and how a job's ranks meet: the rendezvous address and port, the job token the store asks
 * of every rank, and the id of this run, each given or defaulted as {@link Launcher.Builder}
 * documents (one node needs none of them; several nodes must agree on all of them).
 *
 * @param masterAddr the address of the node that runs rank 0
 * @param masterPort the store's port there
 * @param jobToken the job's shared secret
 * @param runId the id of this run, at most 64 bytes
 */
record JobRendezvous(String masterAddr, int masterPort, String jobToken, String runId) {

    private static final SecureRandom RANDOM = new SecureRandom();

    /**
     * Fills in what was not given and checks the result.
     *
     * @param nnodes the nodes in the job
     * @param masterAddr the given address, or null
     * @param masterPort the given port, or null
     * @param jobToken the given token, or null for {@value DistributedEnv#JOB_TOKEN_VARIABLE}
     * @param runId the given run id, or null
     * @return the rendezvous
     * @throws IllegalArgumentException naming the setting several nodes lack, or a run id too long
     */
    static JobRendezvous resolve(
            int nnodes, String masterAddr, Integer masterPort, String jobToken, String runId) {
        if (jobToken == null) {
            jobToken = System.getenv(DistributedEnv.JOB_TOKEN_VARIABLE);
        }
        if (nnodes > 1) {
            Require.that(
                    masterAddr != null,
                    "a job on several nodes needs master-addr: the address of node 0");
            Require.that(
                    jobToken != null && !jobToken.isEmpty(),
                    "a job on several nodes needs the same "
                            + DistributedEnv.JOB_TOKEN_VARIABLE
                            + " on every node; set it, e.g. export "
                            + DistributedEnv.JOB_TOKEN_VARIABLE
                            + "=$(openssl rand -hex 16)");
            if (masterPort == null) {
                masterPort = DistributedEnv.DEFAULT_MASTER_PORT;
            }
        }
        if (masterAddr == null) {
            masterAddr = InetAddress.getLoopbackAddress().getHostAddress();
        }
        if (masterPort == null) {
            masterPort = freePort();
        }
        if (jobToken == null || jobToken.isEmpty()) {
            byte[] secret = new byte[16];
            RANDOM.nextBytes(secret);
            jobToken = HexFormat.of().formatHex(secret);
        }
        if (runId == null) {
            runId = defaultRunId(nnodes);
        }
        Require.that(
                runId.getBytes(StandardCharsets.UTF_8).length <= 64,
                "the run id is limited to 64 bytes, got '" + runId + "'");
        return new JobRendezvous(masterAddr, masterPort, jobToken, runId);
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("Could not find a free port for the rendezvous", e);
        }
    }

    private static String defaultRunId(int nnodes) {
        String given = System.getenv(DistributedEnv.RUN_ID_VARIABLE);
        if (given != null && !given.isBlank()) {
            return given.trim();
        }
        if (nnodes == 1) {
            byte[] id = new byte[8];
            RANDOM.nextBytes(id);
            return HexFormat.of().formatHex(id);
        }
        String slurmJob = System.getenv("SLURM_JOB_ID");
        return slurmJob != null && !slurmJob.isBlank() ? "slurm-" + slurmJob.trim() : "";
    }
}
