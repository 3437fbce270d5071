package ai.djl.fsdp.dist.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.fsdp.dist.CollectiveException;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.HeartbeatWatchdog;
import ai.djl.fsdp.dist.JobAbort;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.rendezvous.TcpStore;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.time.Duration;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * How an NCCL group finds a stopped peer, checked without a GPU against communicators that record
 * their calls, with the peer's heartbeats sent by a {@link HeartbeatWatchdog} of rank 1 that the
 * test closes (what a stopped process looks like to the others): the communicator is aborted within
 * the heartbeat timeout, the error naming the rank that stopped and the collective in flight; a
 * collective whose peers keep beating is waited for past the heartbeat timeout, up to the
 * collective timeout, and that failure is recorded for the other ranks; a rank that closed is not
 * taken for stopped; a job failure aborts the subgroups' communicators too.
 */
class NcclHeartbeatTest {

    private static final Duration HEARTBEAT = Duration.ofSeconds(1);

    /**
     * The heartbeats' interval for that timeout (a tenth of it): a stop may come just after one.
     */
    private static final Duration INTERVAL = Duration.ofMillis(100);

    /** The longest after the heartbeat timeout a detection may take on this loaded machine. */
    private static final Duration SLACK = Duration.ofSeconds(1);

    private static final String STOPPED = "rank 1 has sent no heartbeat for PT1S: its process is";

    @Test
    void
            aStoppedPeerAbortsTheGroupsCommunicatorWithinTheHeartbeatTimeoutNamingItAndTheCollective() {
        TcpStore store = store();
        RecordingCommunicator comm = new RecordingCommunicator();
        HeartbeatWatchdog peer = peer(store);
        NcclProcessGroup group = rankZero(store, comm, Duration.ofMinutes(30));
        RecordingCommunicator.sleep(HEARTBEAT.multipliedBy(3).toMillis());
        assertEquals(List.of(), comm.ends(), "a peer that beats is not taken for stopped");

        group.watchdog.watch(new Collective("allGather #2"));
        peer.close();
        double seconds = awaitAbort(comm);
        System.out.printf(
                "MEASURED rank 1's heartbeats stopped, NCCL group of 2 (a recording communicator),"
                        + " heartbeat timeout %s: rank 0 aborted its communicator after %.2f s%n",
                HEARTBEAT, seconds);
        assertEquals(List.of("abort"), comm.ends());
        assertDetectedInTime(seconds);
        CollectiveException error;
        try (NDManager manager = NDManager.newBaseManager(Device.cpu())) {
            error =
                    assertThrows(
                            CollectiveException.class,
                            () -> group.allReduceAsync(manager.ones(new Shape(1)), ReduceOp.SUM));
        }
        assertTrue(
                error.getMessage()
                        .startsWith(
                                "NCCL communicator aborted on rank 0 in allGather #2: " + STOPPED),
                error.getMessage());
        assertEquals(OptionalInt.of(1), error.getFailedRank());
        group.close();
        assertEquals(List.of("abort"), comm.ends(), "an aborted communicator is not ended again");
    }

    @Test
    void
            aLiveCollectiveOutlastsTheHeartbeatTimeoutAndIsAbortedAtTheCollectiveTimeoutForEveryRank() {
        TcpStore store = store();
        RecordingCommunicator comm = new RecordingCommunicator();
        CompletableFuture<JobAbort.Cause> peerSaw = new CompletableFuture<>();
        HeartbeatWatchdog peer =
                new HeartbeatWatchdog(
                        store.newClient(HEARTBEAT), 1, 2, HEARTBEAT, peerSaw::complete);
        NcclProcessGroup group = rankZero(store, comm, Duration.ofSeconds(3));
        long start = System.nanoTime();
        group.watchdog.watch(new Collective("broadcast #1"));
        RecordingCommunicator.sleep(HEARTBEAT.multipliedBy(2).toMillis());
        assertEquals(List.of(), comm.ends(), "a collective whose peers beat is waited for");
        awaitAbort(comm);
        double seconds = (System.nanoTime() - start) / 1e9;
        assertTrue(seconds > 3 && seconds < 3 + SLACK.toMillis() / 1e3, seconds + " s");
        CollectiveException error = assertThrows(CollectiveException.class, group.watchdog::check);
        String timedOut = "broadcast #1 did not finish on rank 0 within 3 s";
        assertTrue(
                error.getMessage().startsWith("NCCL communicator aborted: " + timedOut),
                error.getMessage());
        assertEquals(OptionalInt.empty(), error.getFailedRank());
        JobAbort.Cause recorded = peerSaw.orTimeout(5, TimeUnit.SECONDS).join();
        assertTrue(recorded.message().startsWith(timedOut), recorded.message());
        assertEquals(-1, recorded.rank());
        peer.close();
        group.close();
    }

    @Test
    void aRankThatClosedIsNotTakenForStoppedByARankStillWorking() throws InterruptedException {
        TcpStore store = store();
        RecordingCommunicator comm0 = new RecordingCommunicator();
        RecordingCommunicator comm1 = new RecordingCommunicator();
        NcclProcessGroup rank0 = rankZero(store, comm0, Duration.ofMinutes(30));
        DistributedEnv env1 = DistributedEnv.of(1, 2, 1, 2, "127.0.0.1", store.getPort(), "t");
        NcclProcessGroup rank1 =
                new NcclProcessGroup(
                        env1, Device.gpu(0), comm1, store.newClient(HEARTBEAT), options(30));
        // Rank 0 closes first and waits in the store for rank 1, whose work goes on.
        Thread closing = new Thread(rank0::close);
        closing.start();
        RecordingCommunicator.sleep(HEARTBEAT.multipliedBy(3).toMillis());
        assertEquals(List.of(), comm1.ends(), "rank 1 took rank 0, which closed, for stopped");
        rank1.close();
        closing.join();
        assertEquals(List.of("finalize", "destroy"), comm0.ends());
        assertEquals(List.of("finalize", "destroy"), comm1.ends());
    }

    @Test
    void aJobFailureAbortsEverySubgroupsCommunicatorAndThoseOfSplitsMadeAsItCame() {
        RecordingCommunicator comm = new RecordingCommunicator();
        DistributedEnv env = DistributedEnv.of(0, 1, 0, 1, "127.0.0.1", 0, "t");
        NcclProcessGroup group =
                new NcclProcessGroup(env, Device.gpu(0), comm, store(), options(30));
        group.split("shard", 0);
        RecordingCommunicator shard = comm.children.get(0);
        // The job's watchdog holds its poll, so the failure is not yet its own as the split is
        // made.
        CountDownLatch release = new CountDownLatch(1);
        comm.holdPolls = release;
        RecordingCommunicator.await(comm.pollHeld);
        JobAbort.Cause cause = new JobAbort.Cause(1, "rank 1 has sent no heartbeat");
        group.abort(cause);
        assertEquals(List.of("abort"), awaitEnds(shard), "the subgroup was not aborted");
        group.split("replicate", 0);
        release.countDown();
        assertEquals(List.of("abort"), awaitEnds(comm.children.get(1)), "the late split");
        assertEquals(List.of("abort"), awaitEnds(comm), "the job's group");
        group.close();
    }

    private static ProcessGroupOptions options(long collectiveSeconds) {
        return ProcessGroupOptions.builder()
                .optTimeout(Duration.ofSeconds(10))
                .optHeartbeatTimeout(HEARTBEAT)
                .optCollectiveTimeout(Duration.ofSeconds(collectiveSeconds))
                .build();
    }

    /** Rank 0's group of two over {@code comm}, on the store it hosts. */
    private static NcclProcessGroup rankZero(
            TcpStore store, RecordingCommunicator comm, Duration collectiveTimeout) {
        DistributedEnv env = DistributedEnv.of(0, 2, 0, 2, "127.0.0.1", store.getPort(), "t");
        return new NcclProcessGroup(
                env, Device.gpu(0), comm, store, options(collectiveTimeout.toSeconds()));
    }

    private static TcpStore store() {
        return TcpStore.builder("127.0.0.1", 0).optHostServer(true).optToken("t").build();
    }

    /** Rank 1's heartbeats, until closed. */
    private static HeartbeatWatchdog peer(TcpStore store) {
        return new HeartbeatWatchdog(store.newClient(HEARTBEAT), 1, 2, HEARTBEAT, cause -> {});
    }

    /** Waits for the communicator to be aborted and returns how long that took, in seconds. */
    private static double awaitAbort(RecordingCommunicator comm) {
        long start = System.nanoTime();
        assertEquals(List.of("abort"), awaitEnds(comm), "the communicator was not aborted");
        return (System.nanoTime() - start) / 1e9;
    }

    /** Waits up to 20 s for the communicator to be ended and returns the calls that ended it. */
    private static List<String> awaitEnds(RecordingCommunicator comm) {
        long start = System.nanoTime();
        while (comm.ends().isEmpty() && System.nanoTime() - start < 20_000_000_000L) {
            RecordingCommunicator.sleep(10);
        }
        return comm.ends();
    }

    /**
     * A stop is found after the heartbeat timeout, less an interval for the beat that may have come
     * just before the stop and one for the watchdog's own timing.
     */
    private static void assertDetectedInTime(double seconds) {
        double timeout = HEARTBEAT.toMillis() / 1e3;
        double interval = INTERVAL.toMillis() / 1e3;
        assertTrue(seconds > timeout - 2 * interval, "found too soon: " + seconds + " s");
        assertTrue(seconds < timeout + SLACK.toMillis() / 1e3, "found too late: " + seconds + " s");
    }

    /** A collective in flight until the test says it is done. */
    private static final class Collective implements QueuedCollective {
        private final String name;
        private final long queued = System.nanoTime();
        volatile boolean done;

        Collective(String name) {
            this.name = name;
        }

        @Override
        public boolean poll() {
            return done;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public long ageNanos() {
            return System.nanoTime() - queued;
        }
    }
}
