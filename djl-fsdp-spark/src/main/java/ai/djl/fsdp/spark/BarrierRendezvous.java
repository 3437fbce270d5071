package ai.djl.fsdp.spark;

import ai.djl.Device;
import ai.djl.fsdp.dist.DistributedEnv;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.BarrierTaskInfo;
import org.apache.spark.SparkEnv;
import org.apache.spark.resource.ResourceInformation;

/**
 * Places a barrier task in the FSDP job, as a launcher places a rank: its rank is the task's
 * partition, the world size the stage's task count, its local rank and local world size come from
 * the tasks on its host, and the store listens on rank 0's host (from the task infos) at a port
 * rank 0 picks, with a fresh job token, both told to every task through the barrier's {@code
 * allGather}, with the checkpoint rank 0 chose for every rank to resume from. The run id names the
 * stage attempt, so a retried stage is a new run.
 */
final class BarrierRendezvous {

    private static final SecureRandom RANDOM = new SecureRandom();

    private BarrierRendezvous() {}

    /**
     * Places the calling barrier task in the job. Every task of the stage must call it.
     *
     * @param context the task's barrier context
     * @param timeout the process group timeout, or null for its default
     * @param ownExecutor whether each rank must run in an executor of its own (training in the
     *     executor's JVM, whose engine state is per process)
     * @param resume the command whose checkpoint rank 0 chooses for every rank, or null for none
     * @return the rank
     * @throws IllegalStateException on every task alike if two ranks share an executor where they
     *     must not
     */
    static SparkRank join(
            BarrierTaskContext context, Duration timeout, boolean ownExecutor, ResumeFlag resume) {
        int rank = context.partitionId();
        List<String> hosts =
                Arrays.stream(context.getTaskInfos())
                        .map(BarrierTaskInfo::address)
                        .map(BarrierRendezvous::host)
                        .toList();
        String executor = SparkEnv.get().executorId();
        String[] gathered = context.allGather(rank == 0 ? leaderOffer(executor, resume) : executor);
        List<String> executors = new ArrayList<>(gathered.length);
        for (String message : gathered) {
            executors.add(message.split(" ", 2)[0]);
        }
        if (ownExecutor) {
            OwnExecutors.require(executors);
        }
        String[] store = gathered[0].split(" ", 4);
        DistributedEnv env =
                DistributedEnv.of(
                                rank,
                                hosts.size(),
                                localRank(hosts, rank),
                                localWorldSize(hosts, rank),
                                hosts.get(0),
                                Integer.parseInt(store[1]),
                                store[2])
                        .withRunId(
                                "spark-"
                                        + context.stageId()
                                        + "."
                                        + context.stageAttemptNumber()
                                        + "-"
                                        + store[2].substring(0, 8));
        return new SparkRank(
                env,
                gpu(context.resourcesJMap()),
                context.cpus(),
                timeout,
                context.stageAttemptNumber(),
                store[3].isEmpty() ? null : Path.of(store[3]));
    }

    /**
     * Rank 0's message to every task: its executor, the store's port, the job's token and the
     * checkpoint to resume from (last, as a path may hold spaces; empty for none).
     */
    static String leaderOffer(String executor, ResumeFlag resume) {
        String checkpoint = resume == null ? "" : resume.choose().map(Path::toString).orElse("");
        return executor + " " + freePort() + " " + newToken() + " " + checkpoint;
    }

    /**
     * Returns the host of a task's {@code host:port} address, an IPv6 address without the brackets
     * of {@code [address]:port}.
     */
    static String host(String address) {
        if (address.startsWith("[")) {
            int end = address.indexOf(']');
            return address.substring(1, end < 0 ? address.length() : end);
        }
        int colon = address.lastIndexOf(':');
        return colon < 0 ? address : address.substring(0, colon);
    }

    /** Returns how many tasks before {@code rank} run on its host. */
    static int localRank(List<String> hosts, int rank) {
        int local = 0;
        for (int i = 0; i < rank; i++) {
            if (hosts.get(i).equals(hosts.get(rank))) {
                local++;
            }
        }
        return local;
    }

    /** Returns how many tasks run on {@code rank}'s host, itself included. */
    static int localWorldSize(List<String> hosts, int rank) {
        return (int) hosts.stream().filter(hosts.get(rank)::equals).count();
    }

    /** Returns the task's GPU, the first address of its {@code gpu} resource, or null. */
    static Device gpu(Map<String, ResourceInformation> resources) {
        ResourceInformation gpus = resources.get("gpu");
        if (gpus == null || gpus.addresses().length == 0) {
            return null;
        }
        return Device.gpu(Integer.parseInt(gpus.addresses()[0]));
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("Could not find a free port for the job's store", e);
        }
    }

    private static String newToken() {
        byte[] token = new byte[16];
        RANDOM.nextBytes(token);
        return HexFormat.of().formatHex(token);
    }
}
