package ai.djl.fsdp.spark;

import ai.djl.Device;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.dist.ProcessGroups;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

/**
 * A barrier task's place in the FSDP job, as {@link FsdpDistributor} hands it to the rank's
 * training: the {@link DistributedEnv} built from the stage (not from the process's environment),
 * the GPU Spark gave the task, and the cores it may use.
 */
public final class SparkRank {

    private final DistributedEnv env;
    private final Device gpu;
    private final int cpus;
    private final Duration timeout;
    private final int stageAttempt;
    private final Path resumeCheckpoint;

    SparkRank(
            DistributedEnv env,
            Device gpu,
            int cpus,
            Duration timeout,
            int stageAttempt,
            Path resumeCheckpoint) {
        this.env = env;
        this.gpu = gpu;
        this.cpus = cpus;
        this.timeout = timeout;
        this.stageAttempt = stageAttempt;
        this.resumeCheckpoint = resumeCheckpoint;
    }

    /** Returns the rank's place in the job: rank, world size, local rank, store address, token. */
    public DistributedEnv getEnv() {
        return env;
    }

    /**
     * Returns the GPU of the task's {@code gpu} resource ({@code spark.task.resource.gpu.amount}),
     * empty when Spark gave it none.
     */
    public Optional<Device> getGpu() {
        return Optional.ofNullable(gpu);
    }

    /** Returns the cores the task may use ({@code spark.task.cpus}). */
    public int getCpus() {
        return cpus;
    }

    /**
     * Returns the attempt of the barrier stage, 0 at first: Spark retries a failed stage as a
     * whole, every rank starting again (and its run id changes with it).
     */
    public int getStageAttempt() {
        return stageAttempt;
    }

    /**
     * Returns the process group options for this rank: its GPU when Spark gave it one (else the
     * rank's default device, see {@code RankDevice}) and the distributor's timeout.
     */
    public ProcessGroupOptions getProcessGroupOptions() {
        ProcessGroupOptions.Builder builder = ProcessGroupOptions.builder();
        getGpu().ifPresent(builder::optDevice);
        if (timeout != null) {
            builder.optTimeout(timeout);
        }
        return builder.build();
    }

    /**
     * Joins the job: {@link ProcessGroups#init(DistributedEnv, ProcessGroupOptions)} with this
     * rank's environment and options. Every rank must call it.
     *
     * @return the job's process group, to close when training ends
     */
    public ProcessGroup initProcessGroup() {
        return ProcessGroups.init(env, getProcessGroupOptions());
    }

    /** Returns the timeout the distributor was given, empty for the process group's default. */
    Optional<Duration> getTimeout() {
        return Optional.ofNullable(timeout);
    }

    /**
     * Returns the checkpoint rank 0 chose for every rank of this attempt to resume from ({@link
     * ResumeFlag}), empty to start afresh.
     */
    Optional<Path> getResumeCheckpoint() {
        return Optional.ofNullable(resumeCheckpoint);
    }

    @Override
    public String toString() {
        return "SparkRank{" + env + (gpu == null ? "" : ", " + gpu) + ", cpus=" + cpus + '}';
    }
}
