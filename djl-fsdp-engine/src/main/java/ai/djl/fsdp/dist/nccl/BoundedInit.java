package ai.djl.fsdp.dist.nccl;

import ai.djl.fsdp.dist.CollectiveException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntSupplier;

/**
 * Runs a communicator's blocking set-up call ({@code ncclCommInitRank}) on a daemon thread of its
 * own and waits for it at most a timeout, so that a peer that never joins (it failed before its own
 * call, or cannot reach this host) ends in an error instead of an endless wait.
 *
 * <p>NCCL's non-blocking initialization would let the communicator be aborted, but it makes every
 * later NCCL call of that communicator possibly return {@code ncclInProgress}; a communicator whose
 * set-up does not finish has no handle to abort anyway. So the call stays blocking and the thread
 * that makes it is left behind when the timeout passes: the error goes up and the rank exits, which
 * ends the thread with the process.
 */
final class BoundedInit {

    private BoundedInit() {}

    /**
     * Makes {@code call} on a new daemon thread and returns its NCCL result code.
     *
     * @param call the set-up call; it must bind the thread to the rank's GPU first, as the CUDA
     *     device is per thread
     * @param name the call's name, for the error
     * @param rank this rank, for the error
     * @param timeout the longest the call may take
     * @return the call's result code
     * @throws CollectiveException if the call throws or does not return within the timeout
     */
    static int run(IntSupplier call, String name, int rank, Duration timeout) {
        CompletableFuture<Integer> result = new CompletableFuture<>();
        Thread thread =
                new Thread(
                        () -> {
                            try {
                                result.complete(call.getAsInt());
                            } catch (Throwable e) {
                                result.completeExceptionally(e);
                            }
                        },
                        "nccl-init-rank-" + rank);
        thread.setDaemon(true);
        thread.start();
        try {
            return result.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new CollectiveException(
                    name
                            + " did not finish on rank "
                            + rank
                            + " within "
                            + (timeout.toMillis() % 1000 == 0
                                    ? timeout.toSeconds() + " s"
                                    : timeout.toMillis() + " ms")
                            + ": a rank did not join the communicator (it failed before"
                            + " joining, or cannot reach this host over NCCL's network: see"
                            + " NCCL_SOCKET_IFNAME, and NCCL_DEBUG=INFO for NCCL's own log)."
                            + " Raise the process group's timeout if the set-up is only slow.");
        } catch (ExecutionException e) {
            throw new CollectiveException(name + " failed on rank " + rank, e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CollectiveException(name + " was interrupted on rank " + rank, e);
        }
    }
}
