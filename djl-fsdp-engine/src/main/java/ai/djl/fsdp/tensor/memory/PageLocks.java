package ai.djl.fsdp.tensor.memory;

import ai.djl.fsdp.util.Failures;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The page ranges of host memory this process has page-locked, each counted by the pinned arrays
 * that lie in it. The CUDA runtime locks whole pages and refuses to register a range that overlaps
 * one already registered ({@code cudaErrorHostMemoryAlreadyRegistered}), while small arrays share
 * pages: so an array's pages are locked as the page-aligned gaps between the ranges already locked,
 * and a range is unregistered only when the last array in it lets go.
 */
final class PageLocks {

    /** How pages are locked: CUDA's {@code cudaHostRegister}, or a recording fake in tests. */
    interface HostRegister {

        /**
         * Page-locks {@code [address, address + bytes)}, whole pages.
         *
         * @return true if locked now, false if it was locked already by someone else (another
         *     library's registration, which stays theirs)
         * @throws IllegalStateException if the memory cannot be locked
         */
        boolean register(long address, long bytes);

        /** Unlocks the range registered at {@code address}. */
        void unregister(long address);
    }

    /** Pages locked by one registration, and how many pinned arrays lie in them. */
    static final class Range {

        private final long start;
        private final long end;
        private final boolean owned;
        private int users;

        private Range(long start, long end, boolean owned) {
            this.start = start;
            this.end = end;
            this.owned = owned;
        }
    }

    private final HostRegister register;
    private final long pageSize;
    private final TreeMap<Long, Range> ranges = new TreeMap<>();

    PageLocks(HostRegister register, long pageSize) {
        this.register = register;
        this.pageSize = pageSize;
    }

    /**
     * Locks the pages of {@code [address, address + bytes)}, registering only those not locked yet.
     *
     * @return the ranges the memory lies in, to hand to {@link #unlock}
     * @throws IllegalStateException if a page cannot be locked; nothing stays locked for it then
     */
    synchronized List<Range> lock(long address, long bytes) {
        long low = Math.floorDiv(address, pageSize) * pageSize;
        long high = Math.floorDiv(address + bytes + pageSize - 1, pageSize) * pageSize;
        List<Range> held = new ArrayList<>();
        try {
            long next = low;
            Map.Entry<Long, Range> before = ranges.lowerEntry(low);
            List<Range> overlapping = new ArrayList<>();
            if (before != null && before.getValue().end > low) {
                overlapping.add(before.getValue());
            }
            overlapping.addAll(ranges.subMap(low, true, high, false).values());
            for (Range range : overlapping) {
                if (range.start > next) {
                    held.add(add(next, range.start));
                }
                range.users++;
                held.add(range);
                next = Math.max(next, range.end);
            }
            if (next < high) {
                held.add(add(next, high));
            }
        } catch (RuntimeException e) {
            unlock(held);
            throw e;
        }
        return held;
    }

    /**
     * Lets go of the ranges {@link #lock} returned, unlocking those no pinned array lies in; every
     * range is let go of even if unlocking one fails (the first failure is thrown).
     */
    synchronized void unlock(List<Range> held) {
        Failures.forEach(
                held,
                range -> {
                    range.users--;
                    if (range.users == 0) {
                        ranges.remove(range.start);
                        if (range.owned) {
                            register.unregister(range.start);
                        }
                    }
                });
    }

    /** Returns the bytes locked now, for tests and logs. */
    synchronized long lockedBytes() {
        return ranges.values().stream().mapToLong(range -> range.end - range.start).sum();
    }

    private Range add(long start, long end) {
        Range range = new Range(start, end, register.register(start, end - start));
        range.users = 1;
        ranges.put(start, range);
        return range;
    }
}
