package ai.djl.fsdp.dist.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.fsdp.dist.CollectiveException;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.HeartbeatWatchdog;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.rendezvous.TcpStore;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.time.Duration;
import java.util.List;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

/**
 * How an NCCL group finds a stopped peer, checked without a GPU against a communicator that records
 * its calls, with the peer's heartbeats sent by a {@link HeartbeatWatchdog} of rank 1 that the test
 * closes (what a stopped process looks like to the others): the communicator is aborted within the
 * heartbeat timeout, the error naming the rank that stopped and the collective in flight; a
 * collective whose peers keep beating is waited for past the heartbeat timeout, up to the
 * collective timeout.
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
    void aStoppedPeerAbortsTheGroupsCommunicatorWithinTheHeartbeatTimeoutNamingIt() {
        TcpStore store = store();
        RecordingCommunicator comm = new RecordingCommunicator();
        HeartbeatWatchdog peer = peer(store);
        ProcessGroupOptions options =
                ProcessGroupOptions.builder()
                        .optTimeout(Duration.ofSeconds(5))
                        .optHeartbeatTimeout(HEARTBEAT)
                        .build();
        DistributedEnv env = DistributedEnv.of(0, 2, 0, 2, "127.0.0.1", 29500, "t");
        NcclProcessGroup group = new NcclProcessGroup(env, Device.gpu(0), comm, store, options);
        RecordingCommunicator.sleep(HEARTBEAT.multipliedBy(3).toMillis());
        assertEquals(List.of(), comm.ends(), "a peer that beats is not taken for stopped");

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
                                "NCCL communicator aborted on rank 0 before the first collective: "
                                        + STOPPED),
                error.getMessage());
        assertEquals(OptionalInt.of(1), error.getFailedRank());
        group.close();
        assertEquals(List.of("abort"), comm.ends(), "an aborted communicator is not ended again");
    }

    @Test
    void aLiveCollectiveOutlastsTheHeartbeatTimeoutAndAStoppedPeerAbortsTheNextNamingBoth() {
        try (RankZero rank0 = new RankZero(Duration.ofMinutes(30))) {
            Collective slow = new Collective("allReduce #1");
            rank0.watchdog.watch(slow);
            RecordingCommunicator.sleep(HEARTBEAT.multipliedBy(4).toMillis());
            assertFalse(rank0.watchdog.aborted(), "a collective whose peers beat is waited for");
            slow.done = true;
            rank0.watchdog.awaitPending();

            rank0.watchdog.watch(new Collective("allGather #2"));
            rank0.peer.close();
            assertDetectedInTime(awaitAbort(rank0.comm));
            CollectiveException error =
                    assertThrows(CollectiveException.class, rank0.watchdog::check);
            assertTrue(
                    error.getMessage()
                            .startsWith(
                                    "NCCL communicator aborted on rank 0 in allGather #2: "
                                            + STOPPED),
                    error.getMessage());
            assertEquals(OptionalInt.of(1), error.getFailedRank());
        }
    }

    @Test
    void aCollectiveOfLivePeersIsAbortedAtTheCollectiveTimeoutWithNoRankBlamed() {
        try (RankZero rank0 = new RankZero(Duration.ofSeconds(2))) {
            rank0.watchdog.watch(new Collective("broadcast #1"));
            awaitAbort(rank0.comm);
            CollectiveException error =
                    assertThrows(CollectiveException.class, rank0.watchdog::check);
            assertTrue(
                    error.getMessage()
                            .startsWith(
                                    "NCCL communicator aborted: broadcast #1 did not finish on"
                                            + " rank 0 within 2 s"
                                            + " (ProcessGroupOptions.optCollectiveTimeout)"),
                    error.getMessage());
            assertEquals(OptionalInt.empty(), error.getFailedRank());
        }
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
        while (comm.ends().isEmpty() && System.nanoTime() - start < 20_000_000_000L) {
            RecordingCommunicator.sleep(10);
        }
        assertEquals(List.of("abort"), comm.ends(), "the communicator was not aborted");
        return (System.nanoTime() - start) / 1e9;
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

    /**
     * Rank 0's NCCL watchdog over a recording communicator, told of stopped peers by rank 0's
     * heartbeats as the job's group tells it, and rank 1's heartbeats, on one store.
     */
    private static final class RankZero implements AutoCloseable {
        final TcpStore store = store();
        final RecordingCommunicator comm = new RecordingCommunicator();
        final NcclWatchdog watchdog;
        final HeartbeatWatchdog heartbeats;
        final HeartbeatWatchdog peer = peer(store);

        RankZero(Duration collectiveTimeout) {
            watchdog = new NcclWatchdog(comm, 0, collectiveTimeout);
            heartbeats =
                    new HeartbeatWatchdog(
                            store.newClient(HEARTBEAT), 0, 2, HEARTBEAT, watchdog::abort);
        }

        @Override
        public void close() {
            peer.close();
            heartbeats.close();
            watchdog.close();
            store.close();
        }
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
