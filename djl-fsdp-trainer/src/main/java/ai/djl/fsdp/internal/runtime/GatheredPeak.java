package ai.djl.fsdp.internal.runtime;

import java.util.List;

/**
 * The most bytes of gathered parameter buffers the units have held at once (prefetched ones
 * included), measured whenever a unit's gather completes.
 */
final class GatheredPeak {

    private final List<FsdpUnit> units;
    private long peakBytes;

    /**
     * Watches {@code units}.
     *
     * @param units every unit, the root included
     */
    GatheredPeak(List<FsdpUnit> units) {
        this.units = List.copyOf(units);
    }

    /** Measures the gathered buffers held now against the peak. */
    void note() {
        long bytes = 0;
        for (FsdpUnit unit : units) {
            bytes += unit.getGatheredResidentBytes();
        }
        peakBytes = Math.max(peakBytes, bytes);
    }

    /** Returns the peak. */
    long getBytes() {
        return peakBytes;
    }
}
