package ai.djl.fsdp.dist;

import ai.djl.fsdp.rendezvous.Store;
import ai.djl.fsdp.rendezvous.StoreException;
import ai.djl.fsdp.rendezvous.StoreTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells a stopped rank from a busy one, on a thread of its own with a store connection of its own;
 * the job's group of either backend runs one.
 *
 * <p>Every {@link #interval} the watchdog adds one to this rank's heartbeat counter in the store,
 * reads the job's {@link JobAbort} record, and reads the counters of its two ring neighbours (the
 * ranks before and after it: each rank is watched by two others). A rank that is busy (a long
 * forward, a slow save) runs its watchdog thread all the same, so its counter moves; a rank whose
 * process is stopped (SIGSTOP, a debugger, a frozen machine) does not. The watchdog reports,
 * through its listener:
 *
 * <ul>
 *   <li>a recorded failure, as soon as it reads one: a failure seen by any rank ends every rank;
 *   <li>a neighbour whose counter has not moved for the timeout, after recording it;
 *   <li>a store that has not answered for the timeout, or has gone: rank 0, its host, has stopped
 *       or died (a busy rank 0 still answers, since the store runs on threads of its own).
 * </ul>
 *
 * A stopped rank is thus found within the timeout plus one interval by each of its neighbours, and
 * every other rank reads the record at its next poll. A neighbour that said it is leaving the job
 * ({@link AbstractProcessGroup#sayLeaving}, written before its heartbeats stop as its group closes)
 * is not stopped: the watchdog stops watching it. What the listener does with the failure is the
 * backend's: the socket ring closes its links, NCCL aborts its communicators.
 */
public final class HeartbeatWatchdog implements AutoCloseable {

    private static final Logger logger = LoggerFactory.getLogger(HeartbeatWatchdog.class);

    static final String HEARTBEAT_KEY_PREFIX = "job/heartbeat/";

    /** The prefix of the store keys by which ranks say they are leaving the job. */
    static final String LEAVING_KEY_PREFIX = "job/leaving/";

    private final Store store;
    private final int rank;
    private final Duration timeout;
    private final Duration interval;
    private final Consumer<JobAbort.Cause> listener;

    /** The last heartbeat count read of each neighbour still watched (-1: none read yet). */
    private final Map<Integer, Long> lastCount = new LinkedHashMap<>();

    private final Map<Integer, Long> lastChange = new LinkedHashMap<>();
    private final Thread thread;
    private volatile boolean closed;

    /**
     * Starts watching.
     *
     * @param store a store client for this watchdog alone, which it closes
     * @param rank this rank in the job
     * @param size the number of ranks in the job
     * @param timeout how long a neighbour may send no heartbeat, or the store not answer
     * @param listener told once of the job's failure, on the watchdog's thread
     */
    public HeartbeatWatchdog(
            Store store, int rank, int size, Duration timeout, Consumer<JobAbort.Cause> listener) {
        this.store = store;
        this.rank = rank;
        this.timeout = timeout;
        this.listener = listener;
        interval = interval(timeout);
        long now = System.nanoTime();
        for (int peer : new int[] {(rank + size - 1) % size, (rank + 1) % size}) {
            if (peer != rank) {
                lastCount.put(peer, -1L);
                lastChange.put(peer, now);
            }
        }
        thread = new Thread(this::run, "djl-fsdp-watchdog-rank" + rank);
        thread.setDaemon(true);
        thread.start();
    }

    /** A tenth of the timeout, between 100 milliseconds and 5 seconds. */
    static Duration interval(Duration timeout) {
        long millis = Math.max(100, Math.min(5000, timeout.toMillis() / 10));
        return Duration.ofMillis(millis);
    }

    private void run() {
        try {
            while (!closed) {
                Optional<JobAbort.Cause> failure = check();
                if (failure.isPresent()) {
                    if (!closed) {
                        listener.accept(failure.get());
                    }
                    return;
                }
                Thread.sleep(interval.toMillis());
            }
        } catch (InterruptedException e) {
            // closed
        } catch (RuntimeException e) {
            if (!closed) {
                logger.error("The watchdog of rank {} failed", rank, e);
            }
        }
    }

    /** One round: beat, read the record, check the neighbours that have not left. */
    private Optional<JobAbort.Cause> check() {
        try {
            store.add(HEARTBEAT_KEY_PREFIX + rank, 1);
            Optional<JobAbort.Cause> recorded = JobAbort.read(store, Duration.ZERO);
            if (recorded.isPresent()) {
                return recorded;
            }
            long now = System.nanoTime();
            for (Iterator<Map.Entry<Integer, Long>> it = lastCount.entrySet().iterator();
                    it.hasNext(); ) {
                Map.Entry<Integer, Long> entry = it.next();
                int peer = entry.getKey();
                long count = heartbeats(peer);
                if (count != entry.getValue()) {
                    entry.setValue(count);
                    lastChange.put(peer, now);
                } else if (now - lastChange.get(peer) > timeout.toNanos()) {
                    if (!isSet(LEAVING_KEY_PREFIX + peer)) {
                        return Optional.of(JobAbort.agree(store, stopped(peer, count)));
                    }
                    it.remove();
                }
            }
            return Optional.empty();
        } catch (StoreException e) {
            if (closed) {
                return Optional.empty();
            }
            return Optional.of(new JobAbort.Cause(0, storeLost(e)));
        }
    }

    private long heartbeats(int peer) {
        try {
            byte[] value = store.get(HEARTBEAT_KEY_PREFIX + peer, Duration.ZERO);
            return Long.parseLong(new String(value, StandardCharsets.UTF_8));
        } catch (StoreTimeoutException e) {
            return 0;
        }
    }

    private boolean isSet(String key) {
        try {
            store.get(key, Duration.ZERO);
            return true;
        } catch (StoreTimeoutException e) {
            return false;
        }
    }

    private JobAbort.Cause stopped(int peer, long count) {
        String message =
                count <= 0
                        ? "rank "
                                + peer
                                + " sent no heartbeat within "
                                + timeout
                                + " of joining the ring: its process is stopped or frozen"
                        : "rank "
                                + peer
                                + " has sent no heartbeat for "
                                + timeout
                                + ": its process is stopped (SIGSTOP, a debugger) or frozen, not"
                                + " merely busy (a busy rank keeps sending them)";
        return new JobAbort.Cause(peer, message);
    }

    private static String storeLost(StoreException e) {
        return "rank 0, which hosts the store, is gone or stopped ("
                + JobAbort.STORE_LOST
                + "): "
                + e.getMessage();
    }

    /**
     * Stops watching, closes the watchdog's store client, and waits for the thread to end: once
     * this returns the listener is not running and will not be told.
     */
    @Override
    public void close() {
        closed = true;
        thread.interrupt();
        store.close();
        Threads.joinUninterruptibly(thread);
    }
}
