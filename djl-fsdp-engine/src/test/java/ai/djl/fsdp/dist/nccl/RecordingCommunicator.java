package ai.djl.fsdp.dist.nccl;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.bytedeco.cuda.global.nccl;
import org.bytedeco.cuda.nccl.ncclComm;

/**
 * A {@link Communicator} for machines without a GPU: it records the calls that end it, any poll
 * made during or after them, and the communicators split from it (recording ones); its asynchronous
 * error and finalize result are the test's to set. While {@link #holdPolls} is set, a poll waits in
 * {@link #asyncError()} until it is counted down, having counted down {@link #pollHeld}.
 */
final class RecordingCommunicator implements Communicator {

    final List<String> calls = new CopyOnWriteArrayList<>();
    final List<String> pollsAfterEnd = new CopyOnWriteArrayList<>();
    final List<RecordingCommunicator> children = new CopyOnWriteArrayList<>();
    final CountDownLatch pollHeld = new CountDownLatch(1);
    volatile CountDownLatch holdPolls;
    volatile int polls;
    volatile boolean ending;
    volatile int asyncError = nccl.ncclSuccess;
    int finalizeResult = nccl.ncclSuccess;
    long finalizeMillis;

    /**
     * Returns the calls that ended (finalized, destroyed or aborted) the communicator, in order.
     */
    List<String> ends() {
        return calls.stream().filter(call -> !call.equals("bind")).toList();
    }

    /** Waits for the watchdog's {@code count}-th poll. */
    void awaitPolls(int count) {
        for (int i = 0; i < 500 && polls < count; i++) {
            sleep(10);
        }
        assertTrue(polls >= count, "the watchdog never polled");
    }

    @Override
    public ncclComm handle() {
        return null;
    }

    @Override
    public void bindThread() {
        calls.add("bind");
    }

    @Override
    public int asyncError() {
        if (ending) {
            pollsAfterEnd.add("asyncError after " + calls);
        }
        polls++;
        CountDownLatch hold = holdPolls;
        if (hold != null) {
            pollHeld.countDown();
            await(hold);
        }
        return asyncError;
    }

    @Override
    public Communicator split(int color, int rank, String what, int jobRank, Duration timeout) {
        RecordingCommunicator child = new RecordingCommunicator();
        children.add(child);
        return child;
    }

    @Override
    public int finalizeComm() {
        end("finalize");
        sleep(finalizeMillis);
        return finalizeResult;
    }

    @Override
    public int destroy() {
        end("destroy");
        return nccl.ncclSuccess;
    }

    @Override
    public int abort() {
        end("abort");
        return nccl.ncclSuccess;
    }

    @Override
    public String describe(int result) {
        return "NCCL result " + result;
    }

    private void end(String call) {
        calls.add(call);
        ending = true;
    }

    static void await(CountDownLatch latch) {
        try {
            assertTrue(latch.await(20, TimeUnit.SECONDS), "never counted down");
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }
}
