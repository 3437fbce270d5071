package ai.djl.fsdp.dist;

import java.util.ArrayList;
import java.util.List;

/**
 * A rank's place in the job read from Slurm's variables, for ranks that {@code srun} starts as one
 * task each: {@code SLURM_PROCID}, {@code SLURM_NTASKS}, {@code SLURM_LOCALID} and the tasks on
 * this node; the rendezvous host from {@code MASTER_ADDR} (Slurm names none) and a port derived
 * from the job id.
 */
final class SlurmTask {

    private SlurmTask() {}

    /** Returns the environment Slurm's variables describe. */
    static DistributedEnv env(EnvVariables v) {
        int rank = v.requiredInt("SLURM_PROCID", "");
        int worldSize = v.requiredInt("SLURM_NTASKS", "SLURM_PROCID is set");
        int localRank = v.intOr("SLURM_LOCALID", 0);
        int localWorldSize;
        if (v.isSet("SLURM_NTASKS_PER_NODE")) {
            localWorldSize = v.requiredInt("SLURM_NTASKS_PER_NODE", "");
        } else if (v.isSet("SLURM_TASKS_PER_NODE")) {
            localWorldSize =
                    tasksOnNode(
                            v.text("SLURM_TASKS_PER_NODE").orElseThrow(),
                            v.intOr("SLURM_NODEID", 0));
        } else {
            localWorldSize = 1;
        }
        return DistributedEnv.of(
                rank,
                worldSize,
                localRank,
                localWorldSize,
                DistributedEnv.masterAddr(v, worldSize, true),
                v.intOr("MASTER_PORT", slurmPort(v)),
                v.text(DistributedEnv.JOB_TOKEN_VARIABLE).orElse(""));
    }

    private static int slurmPort(EnvVariables v) {
        return v.isSet("SLURM_JOB_ID")
                ? DistributedEnv.slurmPort(v.intOr("SLURM_JOB_ID", 0))
                : DistributedEnv.DEFAULT_MASTER_PORT;
    }

    /**
     * Expands Slurm's compressed task counts, such as {@code 2(x3),1} (three nodes with two tasks,
     * then one with one), and returns the count on node {@code nodeId}.
     */
    static int tasksOnNode(String tasksPerNode, int nodeId) {
        List<Integer> perNode = new ArrayList<>();
        for (String part : tasksPerNode.split(",")) {
            String p = part.trim();
            int repeat = 1;
            int open = p.indexOf("(x");
            if (open >= 0) {
                if (!p.endsWith(")")) {
                    throw badTasksPerNode(tasksPerNode);
                }
                repeat =
                        EnvVariables.parse(
                                "SLURM_TASKS_PER_NODE", p.substring(open + 2, p.length() - 1));
                p = p.substring(0, open);
            }
            int tasks = EnvVariables.parse("SLURM_TASKS_PER_NODE", p);
            for (int i = 0; i < repeat; i++) {
                perNode.add(tasks);
            }
        }
        if (nodeId < 0 || nodeId >= perNode.size()) {
            throw new IllegalArgumentException(
                    "SLURM_NODEID="
                            + nodeId
                            + " has no entry in"
                            + " SLURM_TASKS_PER_NODE="
                            + tasksPerNode);
        }
        return perNode.get(nodeId);
    }

    private static IllegalArgumentException badTasksPerNode(String value) {
        return new IllegalArgumentException(
                "SLURM_TASKS_PER_NODE='" + value + "' is not in Slurm's form, such as '2(x3),1'");
    }
}
