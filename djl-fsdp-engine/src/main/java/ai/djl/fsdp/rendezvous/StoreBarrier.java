package ai.djl.fsdp.rendezvous;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A named barrier over a store's keys, shared by the store clients: each rank sets its key of the
 * barrier's current round, then waits for every rank's key of that round.
 *
 * <p>Every rank passes the same barriers in the same order, so counting this client's uses of a
 * name gives all ranks the same fresh keys for each use.
 */
final class StoreBarrier {

    /** Waits up to a timeout for keys and returns those still missing then. */
    @FunctionalInterface
    interface MissingAfterWait {
        List<String> apply(List<String> keys, Duration wait);
    }

    private final Map<String, Integer> rounds = new HashMap<>();

    /**
     * Enters barrier {@code name} and waits for all {@code worldSize} ranks.
     *
     * @throws StoreTimeoutException naming the ranks that did not arrive within {@code timeout}
     */
    void await(
            Store store,
            MissingAfterWait missingAfterWait,
            String name,
            int rank,
            int worldSize,
            Duration timeout) {
        if (rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException(
                    "rank " + rank + " is outside [0, " + worldSize + ") in barrier " + name);
        }
        int round;
        synchronized (rounds) {
            round = rounds.merge(name, 1, Integer::sum);
        }
        String prefix = "barrier/" + name + '/' + round + '/';
        store.set(prefix + rank, new byte[0]);
        List<String> keys = new ArrayList<>(worldSize);
        for (int r = 0; r < worldSize; r++) {
            keys.add(prefix + r);
        }
        List<String> missing = missingAfterWait.apply(keys, timeout);
        if (!missing.isEmpty()) {
            List<Integer> absent = new ArrayList<>();
            for (String key : missing) {
                absent.add(Integer.parseInt(key.substring(prefix.length())));
            }
            throw new StoreTimeoutException(
                    "Barrier '"
                            + name
                            + "' timed out after "
                            + timeout
                            + ": ranks "
                            + absent
                            + " of "
                            + worldSize
                            + " did not arrive");
        }
    }
}
