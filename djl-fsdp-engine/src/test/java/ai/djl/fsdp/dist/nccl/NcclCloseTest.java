package ai.djl.fsdp.dist.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.fsdp.dist.CollectiveException;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.JobAbort;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.rendezvous.StoreException;
import ai.djl.fsdp.rendezvous.TcpStore;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.bytedeco.cuda.global.nccl;
import org.junit.jupiter.api.Test;

/**
 * How an NCCL group ends, checked without a GPU against a communicator that records its calls: a
 * group that ran closes without an error, finalizing then destroying its communicator; the watchdog
 * has stopped polling before the communicator is finalized, destroyed or aborted, and never polls
 * it again; a communicator the watchdog aborted is left alone; one of a job that failed just before
 * the close is aborted, not finalized; one whose group cannot be made is aborted.
 */
class NcclCloseTest {

    private static final ProcessGroupOptions OPTIONS =
            ProcessGroupOptions.builder().optTimeout(Duration.ofSeconds(30)).build();

    @Test
    void closingAHealthyGroupStopsTheWatchdogThenFinalizesAndDestroysAndThrowsNothing() {
        RecordingCommunicator comm = new RecordingCommunicator();
        // Finalizing takes a while, as NCCL's does while it flushes: 10 of the watchdog's polls.
        comm.finalizeMillis = 200;
        NcclProcessGroup group = group(comm);
        comm.awaitPolls(3);
        group.close();
        group.close();
        assertEquals(List.of("finalize", "destroy"), comm.ends());
        assertEquals(List.of(), comm.pollsAfterEnd, "the watchdog polled an ended communicator");
    }

    @Test
    void aFailedFinalizeAbortsAfterTheWatchdogStopsAndIsReported() {
        RecordingCommunicator comm = new RecordingCommunicator();
        comm.finalizeResult = nccl.ncclSystemError;
        NcclProcessGroup group = group(comm);
        comm.awaitPolls(3);
        CollectiveException error = assertThrows(CollectiveException.class, group::close);
        assertTrue(
                error.getMessage().contains("ncclCommFinalize failed on rank 0"),
                error.getMessage());
        assertEquals(List.of("finalize", "abort"), comm.ends());
        assertEquals(List.of(), comm.pollsAfterEnd);
    }

    @Test
    void aSubgroupThatFailsToCloseStillLetsTheGroupEndAndIsReported() {
        RecordingCommunicator comm = new RecordingCommunicator();
        NcclProcessGroup group = group(comm);
        group.split("replicate", 0);
        RecordingCommunicator child = comm.children.get(0);
        child.finalizeResult = nccl.ncclSystemError;
        CollectiveException error = assertThrows(CollectiveException.class, group::close);
        assertTrue(error.getMessage().contains("ncclCommFinalize failed"), error.getMessage());
        assertEquals(List.of("finalize", "abort"), child.ends());
        // The group's own communicator is ended all the same: aborted after the failure.
        assertEquals(List.of("abort"), comm.ends());
        assertEquals(List.of(), comm.pollsAfterEnd);
        group.close();
    }

    @Test
    void aCommunicatorTheWatchdogAbortedIsNotEndedAgain() {
        RecordingCommunicator comm = new RecordingCommunicator();
        comm.asyncError = nccl.ncclRemoteError;
        NcclProcessGroup group = group(comm);
        comm.awaitPolls(1);
        for (int i = 0; i < 200 && comm.ends().isEmpty(); i++) {
            RecordingCommunicator.sleep(10);
        }
        assertEquals(List.of("abort"), comm.ends(), "the watchdog aborts on an async error");
        group.close();
        assertEquals(List.of("abort"), comm.ends());
        assertEquals(List.of(), comm.pollsAfterEnd);
    }

    @Test
    void aJobFailureReportedJustBeforeCloseAbortsInsteadOfFinalizing() throws InterruptedException {
        RecordingCommunicator comm = new RecordingCommunicator();
        NcclProcessGroup group = group(comm);
        // The watchdog's poll is held after it read no failure; close waits for it.
        CountDownLatch release = new CountDownLatch(1);
        comm.holdPolls = release;
        RecordingCommunicator.await(comm.pollHeld);
        group.abort(new JobAbort.Cause(1, "rank 1 has sent no heartbeat"));
        Thread closing = new Thread(group::close);
        closing.start();
        while (closing.getState() != Thread.State.BLOCKED && closing.isAlive()) {
            RecordingCommunicator.sleep(1);
        }
        release.countDown();
        closing.join();
        assertEquals(List.of("abort"), comm.ends(), "a communicator of a failed job was finalized");
    }

    @Test
    void aStoreThatCannotBeReachedAsTheGroupIsMadeAbortsTheCommunicatorAndStartsNothing() {
        RecordingCommunicator comm = new RecordingCommunicator();
        TcpStore host = TcpStore.builder("127.0.0.1", 0).optHostServer(true).optToken("t").build();
        TcpStore client = host.newClient(Duration.ofSeconds(1));
        DistributedEnv env = DistributedEnv.of(0, 2, 0, 2, "127.0.0.1", host.getPort(), "t");
        host.close();
        ProcessGroupOptions options =
                ProcessGroupOptions.builder().optHeartbeatTimeout(Duration.ofSeconds(1)).build();
        assertThrows(
                StoreException.class,
                () -> new NcclProcessGroup(env, Device.gpu(0), comm, client, options));
        assertEquals(List.of("abort"), comm.ends());
        assertTrue(
                Thread.getAllStackTraces().keySet().stream()
                        .noneMatch(thread -> thread.getName().equals("nccl-watchdog-rank-0")),
                "the watchdog's thread was left running");
    }

    private static NcclProcessGroup group(Communicator comm) {
        TcpStore store = TcpStore.builder("127.0.0.1", 0).optHostServer(true).optToken("t").build();
        DistributedEnv env = DistributedEnv.of(0, 1, 0, 1, "127.0.0.1", 0, "t");
        return new NcclProcessGroup(env, Device.gpu(0), comm, store, OPTIONS);
    }
}
