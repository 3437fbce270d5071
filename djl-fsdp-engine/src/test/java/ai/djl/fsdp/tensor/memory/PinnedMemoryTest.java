package ai.djl.fsdp.tensor.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Pinning arrays that share pages, checked without a GPU against a registrar that follows the CUDA
 * runtime's rules: whole pages are locked, a range that overlaps a registered one is refused
 * ({@code cudaErrorHostMemoryAlreadyRegistered}), and unregistering unlocks the whole range.
 */
class PinnedMemoryTest {

    private static final long PAGE = 4096;
    private static final long BASE = 0x7f0000000000L;

    @Test
    void twoArraysOnOnePageArePinnedAndEachKeepsItsPagesUntilItIsClosed() {
        CudaRules cuda = new CudaRules();
        PageLocks locks = new PageLocks(cuda, PAGE);
        // Two small heap allocations: the first ends and the second begins on page 1.
        PinnedMemory first = PinnedMemory.pin(locks, BASE + 100, 5000);
        PinnedMemory second = PinnedMemory.pin(locks, BASE + 5200, 8000);
        assertTrue(first.isPinned() && second.isPinned());
        assertEquals(5000, first.getBytes());
        assertEquals(List.of(), cuda.refused, "no overlapping registration");
        assertTrue(cuda.covers(BASE, BASE + 4 * PAGE), "pages 0 to 3 are locked");

        first.close();
        first.close();
        assertTrue(cuda.covers(BASE + 5200, BASE + 13200), "the second array keeps its pages");
        second.close();
        assertEquals(Map.of(), cuda.registered, "everything is unlocked");
        assertEquals(0, locks.lockedBytes());
        assertFalse(first.isPinned());
    }

    @Test
    void anArrayInsideAnotherArraysPagesRegistersNothing() {
        CudaRules cuda = new CudaRules();
        PageLocks locks = new PageLocks(cuda, PAGE);
        PinnedMemory outer = PinnedMemory.pin(locks, BASE, 3 * PAGE);
        PinnedMemory inner = PinnedMemory.pin(locks, BASE + PAGE + 8, 16);
        assertEquals(1, cuda.calls.size(), cuda.calls.toString());
        outer.close();
        assertTrue(cuda.covers(BASE + PAGE, BASE + 2 * PAGE));
        inner.close();
        assertEquals(Map.of(), cuda.registered);
    }

    @Test
    void pagesSomeoneElseLockedArePinnedButNeverUnlocked() {
        CudaRules cuda = new CudaRules();
        cuda.registered.put(BASE, BASE + PAGE);
        PageLocks locks = new PageLocks(cuda, PAGE);
        PinnedMemory pinned = PinnedMemory.pin(locks, BASE + 10, 100);
        assertTrue(pinned.isPinned());
        pinned.close();
        assertEquals(Map.of(BASE, BASE + PAGE), cuda.registered, "the other owner's lock stays");
    }

    @Test
    void aRefusedLockLeavesNothingLocked() {
        CudaRules cuda = new CudaRules();
        PageLocks locks = new PageLocks(cuda, PAGE);
        PinnedMemory held = PinnedMemory.pin(locks, BASE + PAGE, 10);
        cuda.failAt = BASE + 2 * PAGE;
        assertThrows(IllegalStateException.class, () -> PinnedMemory.pin(locks, BASE, 3 * PAGE));
        assertEquals(Map.of(BASE + PAGE, BASE + 2 * PAGE), cuda.registered);
        held.close();
        assertEquals(Map.of(), cuda.registered);
    }

    @Test
    void aFailedUnlockStillLetsGoOfTheOtherRanges() {
        CudaRules cuda = new CudaRules();
        PageLocks locks = new PageLocks(cuda, PAGE);
        PinnedMemory first = PinnedMemory.pin(locks, BASE, 10);
        PinnedMemory spanning = PinnedMemory.pin(locks, BASE, 2 * PAGE);
        first.close();
        cuda.failUnregisterAt = BASE;
        assertThrows(IllegalStateException.class, spanning::close);
        assertEquals(Map.of(), cuda.registered, "the second page is unlocked all the same");
        assertEquals(0, locks.lockedBytes());
    }

    /** The CUDA runtime's registrations, as {@code cudaHostRegister} keeps them. */
    private static final class CudaRules implements PageLocks.HostRegister {

        final TreeMap<Long, Long> registered = new TreeMap<>();
        final List<String> refused = new ArrayList<>();
        final List<String> calls = new ArrayList<>();
        long failAt = -1;
        long failUnregisterAt = -1;

        @Override
        public boolean register(long address, long bytes) {
            calls.add("register " + address + " " + bytes);
            assertEquals(0, address % PAGE, "whole pages");
            assertEquals(0, bytes % PAGE, "whole pages");
            if (address == failAt) {
                throw new IllegalStateException(
                        "cudaHostRegister failed: cudaErrorMemoryAllocation");
            }
            Map.Entry<Long, Long> before = registered.floorEntry(address + bytes - 1);
            if (before != null && before.getValue() > address) {
                // cudaErrorHostMemoryAlreadyRegistered: fine only where it is all someone else's.
                if (before.getKey() > address || before.getValue() < address + bytes) {
                    refused.add(calls.get(calls.size() - 1));
                }
                return false;
            }
            registered.put(address, address + bytes);
            return true;
        }

        @Override
        public void unregister(long address) {
            calls.add("unregister " + address);
            assertTrue(registered.remove(address) != null, "unregistering what is not registered");
            if (address == failUnregisterAt) {
                throw new IllegalStateException("cudaHostUnregister failed");
            }
        }

        boolean covers(long from, long to) {
            for (long page = from - Math.floorMod(from, PAGE); page < to; page += PAGE) {
                Map.Entry<Long, Long> range = registered.floorEntry(page);
                if (range == null || range.getValue() <= page) {
                    return false;
                }
            }
            return true;
        }
    }
}
