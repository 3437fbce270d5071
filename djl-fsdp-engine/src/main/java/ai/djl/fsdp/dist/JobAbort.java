package ai.djl.fsdp.dist;

import ai.djl.fsdp.rendezvous.Store;
import ai.djl.fsdp.rendezvous.StoreException;
import ai.djl.fsdp.rendezvous.StoreTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The job's first failure, recorded in the store so that every rank fails with the same cause: the
 * rank at fault and a message naming it. The first rank to claim the record writes it; the others
 * adopt it. Every rank's {@link HeartbeatWatchdog} polls it, so a failure seen by one rank ends
 * them all, whichever backend the ranks run.
 */
public final class JobAbort {

    private static final Logger logger = LoggerFactory.getLogger(JobAbort.class);

    /** The store key holding the recorded cause: the rank at fault (-1: none), a newline, text. */
    static final String KEY = "job/abort";

    /** Part of every message of a failure after which the store cannot be reached. */
    public static final String STORE_LOST = "the store is unreachable";

    private static final String CLAIM_KEY = "job/abort-claims";

    /** How long a rank that lost the race to record a failure waits for the winner's cause. */
    private static final Duration READ_WAIT = Duration.ofSeconds(10);

    /**
     * A cause of the job's failure.
     *
     * @param rank the job rank at fault, or -1 when no single rank is
     * @param message what happened, naming that rank
     */
    public record Cause(int rank, String message) {

        byte[] encode() {
            return (rank + "\n" + message).getBytes(StandardCharsets.UTF_8);
        }

        static Cause decode(byte[] bytes) {
            String text = new String(bytes, StandardCharsets.UTF_8);
            int newline = text.indexOf('\n');
            try {
                return new Cause(
                        Integer.parseInt(text.substring(0, newline)), text.substring(newline + 1));
            } catch (RuntimeException e) {
                return new Cause(-1, text);
            }
        }
    }

    private JobAbort() {}

    /**
     * Returns the recorded cause, if one is.
     *
     * @param store the job's store
     * @param wait how long to wait for one to be recorded
     * @return the cause, or empty
     */
    static Optional<Cause> read(Store store, Duration wait) {
        try {
            return Optional.of(Cause.decode(store.get(KEY, wait)));
        } catch (StoreTimeoutException e) {
            return Optional.empty();
        }
    }

    /**
     * Returns the job's recorded cause, recording {@code ours} if none is recorded yet. A rank
     * closes its links only after recording, so a rank whose link broke because a neighbour gave up
     * finds the neighbour's cause here, not a blame on the neighbour.
     *
     * @param store the job's store
     * @param ours the cause this rank saw
     * @return the cause every rank fails with
     * @throws StoreException if the store cannot be reached
     */
    public static Cause agree(Store store, Cause ours) {
        Optional<Cause> recorded = read(store, Duration.ZERO);
        if (recorded.isPresent()) {
            return recorded.get();
        }
        if (store.add(CLAIM_KEY, 1) == 1) {
            store.set(KEY, ours.encode());
            return ours;
        }
        return read(store, READ_WAIT).orElse(ours);
    }

    /**
     * Agrees on the job's cause as {@link #agree} does, on a store client of its own opened for
     * this call, for a thread that must not share the group's client; the store not answering
     * leaves {@code ours}.
     *
     * @param store the job's store, from which the client is opened
     * @param timeout how long the client waits for the store
     * @param ours the cause this rank saw
     * @return the cause every rank fails with, or {@code ours} if the store cannot be reached
     */
    public static Cause agreeOnClient(Store store, Duration timeout, Cause ours) {
        try (Store client = store.newClient(timeout)) {
            return agree(client, ours);
        } catch (StoreException e) {
            logger.warn(
                    "Could not record the job's failure ({}): {}", ours.message(), e.getMessage());
            return ours;
        }
    }
}
