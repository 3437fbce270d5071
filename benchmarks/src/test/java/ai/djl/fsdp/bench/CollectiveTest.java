package ai.djl.fsdp.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class CollectiveTest {

    @Test
    void reportsFollowNcclTestsBandwidthDefinitions() {
        // 4 GB in 2 s over 4 ranks: algbw 2 GB/s; ring factors 3/4 and 2 * 3/4.
        assertEquals(
                "op=all_gather bytes=4000000000 time_ms=2000.000 algbw_GBps=2.000 busbw_GBps=1.500",
                Collective.ALL_GATHER.report(4_000_000_000L, 2.0, 4));
        assertEquals(
                "op=reduce_scatter bytes=4000000000 time_ms=2000.000 algbw_GBps=2.000"
                        + " busbw_GBps=1.500",
                Collective.REDUCE_SCATTER.report(4_000_000_000L, 2.0, 4));
        assertEquals(
                "op=all_reduce bytes=4000000000 time_ms=2000.000 algbw_GBps=2.000 busbw_GBps=3.000",
                Collective.ALL_REDUCE.report(4_000_000_000L, 2.0, 4));
    }

    @Test
    void expectedSumsAddEveryRanksValue() {
        for (int worldSize = 1; worldSize <= 4; worldSize++) {
            for (long index = 0; index < 20; index++) {
                float sum = 0;
                for (int rank = 0; rank < worldSize; rank++) {
                    sum += Collective.value(rank, index);
                }
                assertEquals(sum, Collective.sumOverRanks(worldSize, index));
            }
        }
    }

    @Test
    void labelsRoundTrip() {
        for (Collective collective : Collective.values()) {
            assertEquals(collective, Collective.ofLabel(collective.label()));
        }
    }
}
