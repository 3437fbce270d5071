package ai.djl.fsdp.launch;

import ai.djl.fsdp.dist.RankDevice;
import ai.djl.fsdp.tensor.memory.CudaLibraries;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalInt;

/**
 * Several local ranks on one GPU, a test layout ({@code bin/fsdp launch --ranks-per-gpu K}): local
 * rank {@code r} computes on GPU {@code r / K} ({@value RankDevice#RANKS_PER_GPU_VARIABLE}, read by
 * {@link RankDevice}), and each rank gets what its NCCL needs to accept a GPU that another rank of
 * the communicator also uses. NCCL refuses that ("Duplicate GPU detected") in every release before
 * 2.30; from 2.30 {@code NCCL_MULTI_RANK_GPU_ENABLE=1} allows it (experimental, up to 2 ranks per
 * GPU with NCCL's default settings). Before 2.30 each rank gets a {@code NCCL_HOSTID} of its own,
 * so NCCL takes the ranks for separate hosts and connects them through its socket transport on the
 * loopback interface ({@code NCCL_SOCKET_IFNAME=lo}): every NCCL call is the real one, at a
 * socket's bandwidth.
 */
public final class GpuSharing {

    /** The first NCCL release that lets ranks of one communicator share a GPU: 2.30.0. */
    static final int MULTI_RANK_GPU_VERSION = 23000;

    private final int ranksPerGpu;
    private final OptionalInt ncclVersion;
    private final int nodeRank;

    private GpuSharing(int ranksPerGpu, OptionalInt ncclVersion, int nodeRank) {
        this.ranksPerGpu = ranksPerGpu;
        this.ncclVersion = ncclVersion;
        this.nodeRank = nodeRank;
    }

    /**
     * Returns the layout of {@code ranksPerGpu} local ranks per GPU.
     *
     * @param ranksPerGpu at least 2 (one rank per GPU needs no layout)
     * @param ncclVersion the NCCL found on this node, as {@code ncclGetVersion} codes it; empty in
     *     a dry run on a node without NCCL (no NCCL variables are set then)
     * @param nodeRank this node's index in the job, part of each rank's {@code NCCL_HOSTID}
     * @throws IllegalArgumentException if {@code ranksPerGpu} is below 2
     */
    public static GpuSharing of(int ranksPerGpu, OptionalInt ncclVersion, int nodeRank) {
        Require.that(
                ranksPerGpu >= 2,
                "--ranks-per-gpu must be at least 2 to share a GPU, got " + ranksPerGpu);
        return new GpuSharing(ranksPerGpu, ncclVersion, nodeRank);
    }

    /**
     * Returns the layout a node's launcher uses: {@code requested} ranks per GPU (the {@code
     * --ranks-per-gpu} option), else {@value RankDevice#RANKS_PER_GPU_VARIABLE}'s, with NCCL's
     * variables chosen by the version of the NCCL found here.
     *
     * @param requested the option's value, null when not given
     * @param env the launcher's environment
     * @param nodeRank this node's index in the job
     * @param dryRun whether only the mapping is wanted: then a node without NCCL is no error
     * @return the layout, or null for one rank per GPU
     * @throws IllegalArgumentException if the number is not at least 1, the ranks are kept on the
     *     CPU, or (outside a dry run) NCCL cannot run here, saying why
     */
    public static GpuSharing forNode(
            Integer requested, Map<String, String> env, int nodeRank, boolean dryRun) {
        int perGpu =
                requested != null
                        ? requested
                        : RankDevice.ranksPerGpu(env.get(RankDevice.RANKS_PER_GPU_VARIABLE));
        Require.that(
                perGpu >= 1,
                "--ranks-per-gpu must be at least 1 (1: one rank per GPU), got " + perGpu);
        if (perGpu == 1) {
            return null;
        }
        String device = env.get(RankDevice.DEVICE_VARIABLE);
        Require.that(
                device == null || !device.trim().equalsIgnoreCase("cpu"),
                "--ranks-per-gpu places ranks on GPUs but "
                        + RankDevice.DEVICE_VARIABLE
                        + "=cpu keeps them on the CPU: drop one of the two");
        OptionalInt version;
        try {
            version = OptionalInt.of(CudaLibraries.ncclVersion());
        } catch (IllegalStateException | LinkageError e) {
            Require.that(
                    dryRun,
                    perGpu
                            + " ranks per GPU share each GPU between NCCL ranks, and NCCL cannot"
                            + " run here: "
                            + e.getMessage()
                            + " (launch --dry-run shows the layout without NCCL)");
            version = OptionalInt.empty();
        }
        return of(perGpu, version, nodeRank);
    }

    /**
     * Returns the GPU index of a local rank.
     *
     * @param localRank the rank on this node
     * @return {@code localRank / ranksPerGpu}
     */
    public int gpuOf(int localRank) {
        return localRank / ranksPerGpu;
    }

    /**
     * Returns the variables this layout sets for a local rank.
     *
     * @param localRank the rank on this node
     * @return the variables by name: the ranks per GPU, and NCCL's where its version is known
     */
    public Map<String, String> environment(int localRank) {
        Map<String, String> env = new LinkedHashMap<>();
        env.put(RankDevice.RANKS_PER_GPU_VARIABLE, Integer.toString(ranksPerGpu));
        if (ncclVersion.isPresent()) {
            if (multiRankGpu()) {
                env.put("NCCL_MULTI_RANK_GPU_ENABLE", "1");
            } else {
                env.put("NCCL_HOSTID", "djl-fsdp-node" + nodeRank + "-local-rank" + localRank);
                env.put("NCCL_SOCKET_IFNAME", "lo");
            }
        }
        return env;
    }

    /** Returns the one line the launcher prints: what this layout is, and what it costs. */
    public String notice() {
        String prefix =
                "test layout: "
                        + ranksPerGpu
                        + " ranks per GPU (local rank r on gpu(r / "
                        + ranksPerGpu
                        + ")), ";
        if (ncclVersion.isEmpty()) {
            return prefix + "no NCCL found here, so no NCCL variables are set (dry run)";
        }
        String version = versionName(ncclVersion.getAsInt());
        if (multiRankGpu()) {
            return prefix
                    + "NCCL "
                    + version
                    + " with NCCL_MULTI_RANK_GPU_ENABLE=1 (experimental; more than 2 ranks per"
                    + " GPU may need NCCL_MAX_CTAS): for testing, not for speed";
        }
        return prefix
                + "NCCL "
                + version
                + " (before 2.30) sees each rank as a host of its own (NCCL_HOSTID) and connects"
                + " them through sockets on lo: every collective runs at a socket's bandwidth,"
                + " for testing, not for speed";
    }

    private boolean multiRankGpu() {
        return ncclVersion.getAsInt() >= MULTI_RANK_GPU_VERSION;
    }

    /** Returns NCCL's version code as {@code major.minor.patch} (22809: 2.28.9). */
    static String versionName(int code) {
        return code / 10000 + "." + code % 10000 / 100 + "." + code % 100;
    }
}
