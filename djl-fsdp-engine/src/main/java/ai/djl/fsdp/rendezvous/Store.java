package ai.djl.fsdp.rendezvous;

import java.time.Duration;

/**
 * The job's key-value store, through which ranks find each other (peer addresses, the NCCL unique
 * id) and wait for each other. Rank 0 hosts it at {@code MASTER_ADDR:MASTER_PORT}; every rank, rank
 * 0 included, talks to it as a client.
 *
 * <p>Every call that waits does so for at most the store's timeout, and its error names what did
 * not arrive.
 */
public interface Store extends AutoCloseable {

    /** Stores {@code value} under {@code key}, replacing any earlier value. */
    void set(String key, byte[] value);

    /**
     * Returns the value under {@code key}, waiting up to {@link #getTimeout()} until some rank has
     * set it.
     */
    default byte[] get(String key) {
        return get(key, getTimeout());
    }

    /**
     * Returns the value under {@code key}, waiting up to {@code wait} until some rank has set it; a
     * zero {@code wait} only looks.
     *
     * @throws StoreTimeoutException if the key was not set in time
     */
    byte[] get(String key, Duration wait);

    /** Adds {@code delta} to the counter under {@code key} (0 when absent) and returns the sum. */
    long add(String key, long delta);

    /** Waits until every key has been set. */
    void waitFor(Iterable<String> keys);

    /**
     * Waits until all {@code worldSize} ranks have entered the barrier called {@code name}; the
     * error on a timeout lists the ranks that did not arrive.
     */
    void barrier(String name, int rank, int worldSize);

    /**
     * Opens another client of the same store, with its own connection, for a thread whose calls
     * must not queue behind this client's (a watchdog); the caller closes it.
     *
     * @param timeout the new client's {@link #getTimeout()}
     */
    Store newClient(Duration timeout);

    /** Returns the longest any call waits. */
    Duration getTimeout();

    @Override
    void close();
}
