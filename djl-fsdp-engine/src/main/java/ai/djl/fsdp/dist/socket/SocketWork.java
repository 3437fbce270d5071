package ai.djl.fsdp.dist.socket;

import ai.djl.fsdp.dist.CollectiveException;
import ai.djl.fsdp.dist.Work;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/** A collective queued on, or run by, a {@link SocketProcessGroup}'s communication thread. */
final class SocketWork implements Work {

    private final String description;
    private final CompletableFuture<Void> done = new CompletableFuture<>();

    SocketWork(String description) {
        this.description = description;
    }

    void complete() {
        done.complete(null);
    }

    void fail(RuntimeException cause) {
        done.completeExceptionally(cause);
    }

    @Override
    public void await() {
        try {
            done.join();
        } catch (CompletionException e) {
            Throwable cause = e.getCause();
            // A fresh exception, so the stack trace shows the caller that waited.
            if (cause instanceof CollectiveException) {
                throw new CollectiveException(cause.getMessage(), cause);
            }
            throw new CollectiveException(description + " failed: " + cause, cause);
        }
    }

    @Override
    public boolean isDone() {
        return done.isDone();
    }

    @Override
    public String toString() {
        return description;
    }
}
