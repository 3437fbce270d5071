package ai.djl.fsdp.dist.nccl;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.bytedeco.cuda.global.nccl;
import org.bytedeco.cuda.nccl.ncclComm;

/**
 * A {@link Communicator} for machines without a GPU: it records the calls that end it, and any poll
 * made during or after them; its asynchronous error and finalize result are the test's to set.
 */
final class RecordingCommunicator implements Communicator {

    final List<String> calls = new CopyOnWriteArrayList<>();
    final List<String> pollsAfterEnd = new CopyOnWriteArrayList<>();
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
        return asyncError;
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

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }
}
