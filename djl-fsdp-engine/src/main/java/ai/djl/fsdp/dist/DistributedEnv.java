package ai.djl.fsdp.dist;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Who this process is in a distributed job: its rank, the world size, its place on its node, and
 * where the job's rendezvous store lives.
 *
 * <p>Read from the variables that existing launchers already set, in this order of precedence:
 *
 * <ol>
 *   <li>{@code RANK}, {@code WORLD_SIZE}, {@code LOCAL_RANK}, {@code LOCAL_WORLD_SIZE}, {@code
 *       MASTER_ADDR}, {@code MASTER_PORT}: torchrun, Kubeflow's PyTorchJob (which sets no local
 *       rank: one process per pod) and this project's launcher;
 *   <li>{@code SLURM_PROCID}, {@code SLURM_NTASKS}, {@code SLURM_LOCALID}, {@code
 *       SLURM_NTASKS_PER_NODE} or {@code SLURM_TASKS_PER_NODE} (with {@code SLURM_NODEID}): a Slurm
 *       step ({@code srun}); Slurm names no rendezvous host, so {@code MASTER_ADDR} must be
 *       exported;
 *   <li>none of them: a single process (rank 0 of 1).
 * </ol>
 *
 * <p>{@code DJL_FSDP_JOB_TOKEN} is the secret that every rank presents to the store and to its ring
 * neighbours; processes without it are refused. {@code DJL_FSDP_RUN_ID} (set by {@code bin/fsdp
 * launch}, afresh for each launch; under Slurm the job and step ids) tells two jobs given the same
 * port and token apart: the store refuses a rank of another run.
 *
 * <p>Under Slurm without {@code MASTER_PORT}, the port is {@value #SLURM_PORT_BASE} plus the last
 * four digits of {@code SLURM_JOB_ID}, so two jobs sharing a node do not collide.
 *
 * <p>A rank started by {@code bin/fsdp launch} exits within seconds of its launcher's death: {@link
 * #fromEnvironment()} arms a {@link LauncherWatch}.
 */
public final class DistributedEnv {

    /** The port torchrun uses when none is given. */
    public static final int DEFAULT_MASTER_PORT = 29500;

    /** The environment variable holding the job's shared secret. */
    public static final String JOB_TOKEN_VARIABLE = "DJL_FSDP_JOB_TOKEN";

    /** Set to {@code True} by launchers that host the store themselves (torchrun's agent). */
    public static final String AGENT_STORE_VARIABLE = "TORCHELASTIC_USE_AGENT_STORE";

    /** The environment variable holding the id of this run of the job. */
    public static final String RUN_ID_VARIABLE = "DJL_FSDP_RUN_ID";

    /**
     * Under Slurm without {@code MASTER_PORT}: the port is this plus {@code SLURM_JOB_ID % 10000}.
     */
    public static final int SLURM_PORT_BASE = 15000;

    /**
     * Returns the store port of Slurm job {@code jobId} when no {@code MASTER_PORT} is given, so
     * that two jobs sharing a node differ.
     *
     * @param jobId the job's {@code SLURM_JOB_ID}
     * @return {@value #SLURM_PORT_BASE} plus {@code jobId % 10000}
     */
    public static int slurmPort(int jobId) {
        return SLURM_PORT_BASE + jobId % 10000;
    }

    private static final String LOOPBACK = "127.0.0.1";

    private final int rank;
    private final int worldSize;
    private final int localRank;
    private final int localWorldSize;
    private final String masterAddr;
    private final int masterPort;
    private final String jobToken;
    private final String runId;
    private final boolean agentStore;

    private DistributedEnv(
            int rank,
            int worldSize,
            int localRank,
            int localWorldSize,
            String masterAddr,
            int masterPort,
            String jobToken,
            String runId,
            boolean agentStore) {
        this.rank = rank;
        this.worldSize = worldSize;
        this.localRank = localRank;
        this.localWorldSize = localWorldSize;
        this.masterAddr = masterAddr;
        this.masterPort = masterPort;
        this.jobToken = jobToken;
        this.runId = runId;
        this.agentStore = agentStore;
    }

    /**
     * Returns the environment of this process.
     *
     * @throws IllegalArgumentException if the variables are inconsistent; the message names them
     */
    public static DistributedEnv fromEnvironment() {
        DistributedEnv env = fromVariables(System.getenv());
        LauncherWatch.armFromEnvironment(env.getRank());
        return env;
    }

    /**
     * Returns the environment described by {@code variables} (a process environment).
     *
     * @throws IllegalArgumentException if the variables are inconsistent; the message names them
     */
    public static DistributedEnv fromVariables(Map<String, String> variables) {
        EnvVariables v = new EnvVariables(variables);
        DistributedEnv env;
        if (v.isSet("RANK") || v.isSet("WORLD_SIZE")) {
            env = fromTorchrunStyle(v);
        } else if (v.isSet("SLURM_PROCID")) {
            env = SlurmTask.env(v);
        } else {
            env = single(v.text(JOB_TOKEN_VARIABLE).orElse(""));
        }
        boolean agentStore =
                v.text(AGENT_STORE_VARIABLE).map("true"::equalsIgnoreCase).orElse(false);
        return new DistributedEnv(
                        env.rank,
                        env.worldSize,
                        env.localRank,
                        env.localWorldSize,
                        env.masterAddr,
                        env.masterPort,
                        env.jobToken,
                        "",
                        agentStore)
                .withRunId(runId(v, agentStore));
    }

    private static String runId(EnvVariables v, boolean agentStore) {
        Optional<String> given = v.text(RUN_ID_VARIABLE);
        if (given.isPresent()) {
            return given.get();
        }
        if (agentStore) {
            // The agent's store outlives a restart of the workers: each attempt needs fresh keys.
            String id =
                    "torchelastic-"
                            + v.text("TORCHELASTIC_RESTART_COUNT").orElse("0")
                            + '-'
                            + v.text("TORCHELASTIC_RUN_ID").orElse("none");
            return id.length() > 64 ? id.substring(0, 64) : id;
        }
        if (v.isSet("SLURM_JOB_ID") && !v.isSet("RANK")) {
            return "slurm-"
                    + v.text("SLURM_JOB_ID").get()
                    + v.text("SLURM_STEP_ID").map(s -> "." + s).orElse("");
        }
        return "";
    }

    /**
     * Returns this environment with another run id (see {@link #getRunId()}).
     *
     * @throws IllegalArgumentException if it is longer than 64 bytes
     */
    public DistributedEnv withRunId(String runId) {
        if (runId.getBytes(StandardCharsets.UTF_8).length > 64) {
            throw new IllegalArgumentException(
                    RUN_ID_VARIABLE + "='" + runId + "' is longer than 64 bytes");
        }
        return new DistributedEnv(
                rank,
                worldSize,
                localRank,
                localWorldSize,
                masterAddr,
                masterPort,
                jobToken,
                runId,
                agentStore);
    }

    /**
     * Returns the environment of a job of one process, whose store listens on a free loopback port.
     */
    public static DistributedEnv single(String jobToken) {
        return new DistributedEnv(
                0, 1, 0, 1, LOOPBACK, 0, Objects.requireNonNull(jobToken), "", false);
    }

    /**
     * Returns an environment with explicit values, as a launcher sets them.
     *
     * @throws IllegalArgumentException if the values are inconsistent
     */
    public static DistributedEnv of(
            int rank,
            int worldSize,
            int localRank,
            int localWorldSize,
            String masterAddr,
            int masterPort,
            String jobToken) {
        check(worldSize >= 1, "WORLD_SIZE", worldSize, "must be at least 1");
        check(
                rank >= 0 && rank < worldSize,
                "RANK",
                rank,
                "must be in [0, WORLD_SIZE=" + worldSize + ")");
        check(
                localWorldSize >= 1 && localWorldSize <= worldSize,
                "LOCAL_WORLD_SIZE",
                localWorldSize,
                "must be in [1, WORLD_SIZE=" + worldSize + "]");
        check(
                localRank >= 0 && localRank < localWorldSize,
                "LOCAL_RANK",
                localRank,
                "must be in [0, LOCAL_WORLD_SIZE=" + localWorldSize + ")");
        check(
                masterPort >= 0 && masterPort <= 65535,
                "MASTER_PORT",
                masterPort,
                "must be a TCP port");
        check(
                masterPort != 0 || worldSize == 1,
                "MASTER_PORT",
                masterPort,
                "0 (any free port) only works for a single process");
        if (masterAddr == null || masterAddr.isBlank()) {
            throw new IllegalArgumentException(
                    "MASTER_ADDR is empty: set it to rank 0's host name");
        }
        return new DistributedEnv(
                rank,
                worldSize,
                localRank,
                localWorldSize,
                masterAddr,
                masterPort,
                Objects.requireNonNull(jobToken),
                "",
                false);
    }

    private static DistributedEnv fromTorchrunStyle(EnvVariables v) {
        int worldSize = v.requiredInt("WORLD_SIZE", "RANK is set");
        int rank = v.requiredInt("RANK", "WORLD_SIZE is set");
        int localWorldSize = v.intOr("LOCAL_WORLD_SIZE", 1);
        int localRank = v.intOr("LOCAL_RANK", 0);
        return of(
                rank,
                worldSize,
                localRank,
                localWorldSize,
                masterAddr(v, worldSize, false),
                v.intOr("MASTER_PORT", DEFAULT_MASTER_PORT),
                v.text(JOB_TOKEN_VARIABLE).orElse(""));
    }

    /**
     * Returns {@code MASTER_ADDR}, or the loopback address for a job of one rank.
     *
     * @throws IllegalArgumentException saying how to set it, for a torchrun-style or Slurm job
     */
    static String masterAddr(EnvVariables v, int worldSize, boolean slurm) {
        Optional<String> addr = v.text("MASTER_ADDR");
        if (addr.isPresent()) {
            return addr.get();
        }
        if (worldSize == 1) {
            return LOOPBACK;
        }
        if (slurm) {
            throw new IllegalArgumentException(
                    "MASTER_ADDR is not set: Slurm names no rendezvous host. Export the first node"
                            + " of the job before srun, e.g. MASTER_ADDR=$(scontrol show hostnames"
                            + " \"$SLURM_JOB_NODELIST\" | head -n 1)");
        }
        throw new IllegalArgumentException(
                "MASTER_ADDR is not set: with WORLD_SIZE="
                        + worldSize
                        + " every rank needs rank 0's host name in MASTER_ADDR");
    }

    private static void check(boolean ok, String name, int value, String rule) {
        if (!ok) {
            throw new IllegalArgumentException(name + "=" + value + " " + rule);
        }
    }

    /** Returns this process's rank, {@code 0 <= rank < worldSize}. */
    public int getRank() {
        return rank;
    }

    /** Returns the number of processes in the job. */
    public int getWorldSize() {
        return worldSize;
    }

    /** Returns this process's rank among the processes on its node. */
    public int getLocalRank() {
        return localRank;
    }

    /** Returns the number of processes on this node. */
    public int getLocalWorldSize() {
        return localWorldSize;
    }

    /** Returns the host of rank 0, where the rendezvous store listens. */
    public String getMasterAddr() {
        return masterAddr;
    }

    /** Returns the store's port; 0 (a single process only) means any free port. */
    public int getMasterPort() {
        return masterPort;
    }

    /** Returns the job's shared secret, empty when none was given. */
    public String getJobToken() {
        return jobToken;
    }

    /**
     * Returns whether the launcher hosts the job's store, a PyTorch TCPStore at {@code
     * MASTER_ADDR:MASTER_PORT}, and announced it with {@code TORCHELASTIC_USE_AGENT_STORE=True}
     * (torchrun, Kubeflow's PyTorchJob, {@code accelerate launch}): then no rank hosts one, and the
     * ranks keep their keys under the run id, which defaults to the agent's run id and restart
     * count.
     */
    public boolean isAgentStore() {
        return agentStore;
    }

    /** Returns the id of this run of the job, empty when none was given. */
    public String getRunId() {
        return runId;
    }

    /** {@inheritDoc} The job token is not shown. */
    @Override
    public String toString() {
        return "DistributedEnv{rank="
                + rank
                + ", worldSize="
                + worldSize
                + ", localRank="
                + localRank
                + ", localWorldSize="
                + localWorldSize
                + ", master="
                + masterAddr
                + ':'
                + masterPort
                + ", token="
                + (jobToken.isEmpty() ? "none" : "set")
                + (runId.isEmpty() ? "" : ", run=" + runId)
                + (agentStore ? ", agent store" : "")
                + '}';
    }
}
