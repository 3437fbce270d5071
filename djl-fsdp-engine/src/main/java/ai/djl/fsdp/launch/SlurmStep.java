package ai.djl.fsdp.launch;

import ai.djl.fsdp.dist.DistributedEnv;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.ParameterException;

/**
 * The Slurm step {@code bin/fsdp launch} runs in, if any. A launcher starts every rank of its node,
 * so it must be the only task of the step on its node: as one of several tasks each would start a
 * whole job of its own, writing the same output. With one task per node it takes the node count and
 * its node's index from Slurm.
 */
final class SlurmStep {

    private final int tasks;
    private final int nodes;
    private final int nodeId;
    private final String stepId;

    private SlurmStep(int tasks, int nodes, int nodeId, String stepId) {
        this.tasks = tasks;
        this.nodes = nodes;
        this.nodeId = nodeId;
        this.stepId = stepId;
    }

    /** Returns the step described by {@code env}, or null outside a step ({@code srun}). */
    static SlurmStep of(Map<String, String> env) {
        String step = env.get("SLURM_STEP_ID");
        if (step == null || step.isBlank()) {
            return null;
        }
        return new SlurmStep(
                number(env, "SLURM_STEP_NUM_TASKS", number(env, "SLURM_NTASKS", 1)),
                number(env, "SLURM_STEP_NUM_NODES", number(env, "SLURM_NNODES", 1)),
                number(env, "SLURM_NODEID", 0),
                step.trim());
    }

    /**
     * Returns the store port when none is given: {@code MASTER_PORT}, else one derived from the
     * Slurm job id so that two jobs sharing a node differ; null to leave it to the launcher.
     */
    static Integer defaultPort(Map<String, String> env) {
        String port = env.get("MASTER_PORT");
        if (port != null && !port.isBlank()) {
            return number(env, "MASTER_PORT", 0);
        }
        String job = env.get("SLURM_JOB_ID");
        if (job != null && !job.isBlank()) {
            return DistributedEnv.slurmPort(number(env, "SLURM_JOB_ID", 0));
        }
        return null;
    }

    int nodes() {
        return nodes;
    }

    int nodeId() {
        return nodeId;
    }

    /** Refuses a step with more tasks than nodes, saying what to run instead. */
    void requireOneTaskPerNode(CommandLine commandLine) {
        if (tasks > nodes) {
            throw new ParameterException(
                    commandLine,
                    "bin/fsdp launch runs as one of "
                            + tasks
                            + " tasks of Slurm step "
                            + stepId
                            + " on "
                            + nodes
                            + " node(s): each task would start a whole job of its own. Run one"
                            + " launcher per node (srun --ntasks-per-node=1 bin/fsdp launch"
                            + " --nproc-per-node N ...), or let srun start the ranks itself"
                            + " (srun -n N bin/fsdp finetune ...)");
        }
    }

    private static int number(Map<String, String> env, String name, int fallback) {
        String value = env.get(name);
        if (value == null || value.isBlank()) {
            return fallback;
        }
        try {
            return Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + "='" + value + "' is not a whole number", e);
        }
    }
}
