package ai.djl.fsdp.dist.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.dist.CollectiveException;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/** The communicator's set-up ends in an error when a peer never joins, instead of hanging. */
class BoundedInitTest {

    @Test
    void returnsTheCallsResult() {
        assertEquals(5, BoundedInit.run(() -> 5, "ncclCommInitRank", 0, Duration.ofSeconds(30)));
    }

    @Test
    void aCallThatNeverReturnsEndsInAnErrorAfterTheTimeout() {
        CountDownLatch never = new CountDownLatch(1);
        CollectiveException e;
        try {
            e =
                    assertThrows(
                            CollectiveException.class,
                            () ->
                                    BoundedInit.run(
                                            () -> {
                                                try {
                                                    never.await();
                                                } catch (InterruptedException ignored) {
                                                    Thread.currentThread().interrupt();
                                                }
                                                return 0;
                                            },
                                            "ncclCommInitRank",
                                            1,
                                            Duration.ofMillis(300)));
        } finally {
            never.countDown(); // the abandoned call's thread ends
        }
        assertTrue(
                e.getMessage()
                        .startsWith(
                                "ncclCommInitRank did not finish on rank 1 within 300 ms: a rank"
                                        + " did not join the communicator"),
                e.getMessage());
        assertTrue(e.getMessage().contains("NCCL_SOCKET_IFNAME"), e.getMessage());
    }

    @Test
    void aCallThatThrowsPassesItsFailureOn() {
        IllegalStateException cause = new IllegalStateException("cudaSetDevice failed");
        CollectiveException e =
                assertThrows(
                        CollectiveException.class,
                        () ->
                                BoundedInit.run(
                                        () -> {
                                            throw cause;
                                        },
                                        "ncclCommInitRank",
                                        0,
                                        Duration.ofSeconds(30)));
        assertEquals("ncclCommInitRank failed on rank 0", e.getMessage());
        assertSame(cause, e.getCause());
    }
}
