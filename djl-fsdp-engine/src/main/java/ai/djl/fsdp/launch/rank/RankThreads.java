package ai.djl.fsdp.launch.rank;

import ai.djl.fsdp.dist.DistributedEnv;
import java.util.Map;

/**
 * The intra-op threads of a rank, so that ranks sharing a machine do not oversubscribe its cores
 * (torchrun sets {@code OMP_NUM_THREADS=1} for the same reason; libtorch otherwise takes every core
 * in every rank, and two ranks on two cores then run several times slower).
 *
 * <p>On {@code bin/fsdp launch}: {@code --threads-per-rank}, else the environment's {@code
 * OMP_NUM_THREADS} (kept, as torchrun keeps it), else the cores divided among the node's ranks, at
 * least 1. For ranks a scheduler starts itself (Slurm's {@code srun bin/fsdp ...}): {@code
 * SLURM_CPUS_PER_TASK}, else the cores divided among the node's tasks.
 *
 * @param perRank the threads each rank gets
 * @param note one line to print when ranks times threads exceed the cores, else null
 */
public record RankThreads(int perRank, String note) {

    /** DJL's system property for libtorch's intra-op threads. */
    public static final String THREADS_PROPERTY = "ai.djl.pytorch.num_threads";

    /** DJL's system property for libtorch's inter-op threads. */
    public static final String INTEROP_THREADS_PROPERTY = "ai.djl.pytorch.num_interop_threads";

    /**
     * Decides the threads of each rank a launcher starts on this node.
     *
     * @param requested {@code --threads-per-rank}, or null
     * @param ranks the ranks on this node
     * @param cores the cores this process may use
     * @param environment the launcher's environment ({@code OMP_NUM_THREADS})
     * @return the threads per rank, and a note if the ranks oversubscribe the cores
     */
    public static RankThreads forNode(
            Integer requested, int ranks, int cores, Map<String, String> environment) {
        Integer inherited = positive(environment.get("OMP_NUM_THREADS"));
        int threads =
                requested != null
                        ? requested
                        : inherited != null ? inherited : Math.max(1, cores / ranks);
        if ((long) threads * ranks <= cores) {
            return new RankThreads(threads, null);
        }
        String note =
                requested == null && inherited == null
                        ? ranks
                                + " ranks on "
                                + cores
                                + " cores: 1 intra-op thread per rank (OMP_NUM_THREADS=1, as"
                                + " torchrun sets it); the ranks still oversubscribe the cores,"
                                + " so each runs slower than alone"
                        : ranks
                                + (ranks == 1 ? " rank x " : " ranks x ")
                                + threads
                                + " intra-op threads ("
                                + (requested != null
                                        ? "--threads-per-rank"
                                        : "OMP_NUM_THREADS in the environment")
                                + ") exceed the "
                                + cores
                                + " cores, so each rank runs slower than alone; "
                                + Math.max(1, cores / ranks)
                                + " per rank would fit";
        return new RankThreads(threads, note);
    }

    /**
     * For a rank started by Slurm itself ({@code srun bin/fsdp finetune ...}), sets DJL's thread
     * properties to this task's share of the node unless they are set: {@code SLURM_CPUS_PER_TASK},
     * else the cores divided among the node's tasks. A rank of {@code bin/fsdp launch} has them set
     * by its launcher; outside Slurm nothing changes.
     *
     * @param environment the process's environment
     * @param cores the cores this process may use
     * @return the threads set, or null where nothing was set
     */
    public static Integer applyToSlurmTask(Map<String, String> environment, int cores) {
        if (!environment.containsKey("SLURM_PROCID")
                || System.getProperty(THREADS_PROPERTY) != null) {
            return null;
        }
        Integer threads = positive(environment.get("SLURM_CPUS_PER_TASK"));
        if (threads == null) {
            int tasks;
            try {
                tasks = DistributedEnv.fromVariables(environment).getLocalWorldSize();
            } catch (RuntimeException notAJob) {
                return null;
            }
            threads = Math.max(1, cores / Math.max(1, tasks));
        }
        System.setProperty(THREADS_PROPERTY, Integer.toString(threads));
        if (System.getProperty(INTEROP_THREADS_PROPERTY) == null) {
            System.setProperty(INTEROP_THREADS_PROPERTY, "1");
        }
        return threads;
    }

    private static Integer positive(String value) {
        try {
            int parsed = value == null ? 0 : Integer.parseInt(value.trim());
            return parsed > 0 ? parsed : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }
}
