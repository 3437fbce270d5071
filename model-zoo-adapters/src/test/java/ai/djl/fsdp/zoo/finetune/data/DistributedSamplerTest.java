package ai.djl.fsdp.zoo.finetune.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The sampler's ranks read disjoint, complete, equally long, reproducible parts of each epoch. */
class DistributedSamplerTest {

    private static List<Integer> epoch(DistributedSampler sampler) {
        List<Integer> read = new ArrayList<>();
        while (sampler.hasNext()) {
            for (int index : sampler.next()) {
                read.add(index);
            }
        }
        return read;
    }

    @Test
    void ranksAreDisjointCompleteAndEquallyLong() {
        for (int size : new int[] {12, 13, 101}) {
            int world = 3;
            Set<Integer> union = new HashSet<>();
            int batches = -1;
            int total = 0;
            for (int rank = 0; rank < world; rank++) {
                DistributedSampler sampler = new DistributedSampler(size, rank, world, 4, true, 7);
                if (batches >= 0) {
                    assertEquals(batches, sampler.getBatchesPerEpoch(), "same batches per rank");
                }
                batches = sampler.getBatchesPerEpoch();
                List<Integer> read = epoch(sampler);
                total += read.size();
                union.addAll(read);
            }
            assertEquals(size, union.size(), "every example is read");
            // Padding to a multiple of the world size repeats fewer than `world` examples.
            assertTrue(total - size < world, "total " + total + " of " + size);
        }
    }

    /** 5 examples on 2 ranks: rank 1's last index wraps to example 0, and is marked padding. */
    @Test
    void paddingIsMarkedSoEachExampleCountsOnce() {
        List<Integer> counted = new ArrayList<>();
        List<Integer> padding = new ArrayList<>();
        for (int rank = 0; rank < 2; rank++) {
            DistributedSampler sampler = new DistributedSampler(5, rank, 2, 2, false, 0);
            assertEquals(0, sampler.getPadding(), "nothing read yet");
            while (sampler.hasNext()) {
                int[] batch = sampler.next();
                int real = batch.length - sampler.getPadding();
                for (int i = 0; i < batch.length; i++) {
                    (i < real ? counted : padding).add(batch[i]);
                }
            }
        }
        assertEquals(List.of(0, 2, 4, 1, 3), counted, "each example once");
        assertEquals(List.of(0), padding, "rank 1's third position wraps to the first example");
        for (int size : new int[] {12, 13, 101}) {
            int total = 0;
            for (int rank = 0; rank < 3; rank++) {
                DistributedSampler sampler = new DistributedSampler(size, rank, 3, 4, true, 7);
                while (sampler.hasNext()) {
                    total += sampler.next().length - sampler.getPadding();
                }
            }
            assertEquals(size, total, "without padding the ranks read each of " + size + " once");
        }
    }

    @Test
    void epochsAreReshuffledFromTheSeedAlike() {
        DistributedSampler a = new DistributedSampler(50, 1, 2, 5, true, 3);
        DistributedSampler b = new DistributedSampler(50, 1, 2, 5, true, 3);
        List<Integer> first = epoch(a);
        assertEquals(first, epoch(b), "same seed, same order");
        a.nextEpoch();
        assertNotEquals(first, epoch(a), "the next epoch is shuffled anew");
        DistributedSampler other = new DistributedSampler(50, 1, 2, 5, true, 4);
        assertNotEquals(first, epoch(other), "another seed, another order");
        DistributedSampler ordered = new DistributedSampler(6, 0, 2, 2, false, 3);
        assertEquals(List.of(0, 2, 4), epoch(ordered));
    }

    @Test
    void resumesFromItsPosition() {
        DistributedSampler run = new DistributedSampler(40, 0, 2, 3, true, 11);
        run.nextEpoch();
        run.next();
        run.next();
        int epoch = run.getEpoch();
        int read = run.getBatchesRead();
        List<int[]> rest = new ArrayList<>();
        while (run.hasNext()) {
            rest.add(run.next());
        }
        DistributedSampler resumed = new DistributedSampler(40, 0, 2, 3, true, 11);
        resumed.seek(epoch, read);
        for (int[] batch : rest) {
            assertArrayEquals(batch, resumed.next());
        }
        assertTrue(!resumed.hasNext());
    }
}
