package ai.djl.fsdp.rendezvous;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/** The store server's key-value map, with waits for keys that are not set yet. */
final class StoreValues {

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final Map<String, byte[]> values = new HashMap<>();
    private boolean closed;

    void set(String key, byte[] value) {
        lock.lock();
        try {
            values.put(key, value);
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    long add(String key, long delta) {
        lock.lock();
        try {
            byte[] old = values.get(key);
            long sum =
                    (old == null ? 0 : Long.parseLong(new String(old, StandardCharsets.UTF_8)))
                            + delta;
            values.put(key, Long.toString(sum).getBytes(StandardCharsets.UTF_8));
            changed.signalAll();
            return sum;
        } finally {
            lock.unlock();
        }
    }

    /** Returns the value, or null when it was not set within {@code millis}. */
    byte[] awaitValue(String key, long millis) {
        lock.lock();
        try {
            awaitKeys(List.of(key), millis);
            return values.get(key);
        } finally {
            lock.unlock();
        }
    }

    /** Returns the keys still missing after waiting up to {@code millis} for all of them. */
    List<String> awaitKeys(List<String> keys, long millis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        lock.lock();
        try {
            while (true) {
                List<String> missing = new ArrayList<>();
                for (String key : keys) {
                    if (!values.containsKey(key)) {
                        missing.add(key);
                    }
                }
                long left = deadline - System.nanoTime();
                if (missing.isEmpty() || left <= 0 || closed) {
                    return missing;
                }
                changed.awaitNanos(left);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return keys;
        } finally {
            lock.unlock();
        }
    }

    /** Ends every wait: a closed store answers with what it has. */
    void close() {
        lock.lock();
        try {
            closed = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }
}
