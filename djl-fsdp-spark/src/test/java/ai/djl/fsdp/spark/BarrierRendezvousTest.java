package ai.djl.fsdp.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

/** How a barrier task finds its place on its host, and when ranks may not share an executor. */
class BarrierRendezvousTest {

    @Test
    void localRanksCountTheTasksOnTheSameHost() {
        List<String> hosts = List.of("a", "b", "a", "a", "b");
        assertEquals(
                List.of(0, 0, 1, 2, 1),
                List.of(0, 1, 2, 3, 4).stream()
                        .map(rank -> BarrierRendezvous.localRank(hosts, rank))
                        .toList());
        assertEquals(
                List.of(3, 2, 3, 3, 2),
                List.of(0, 1, 2, 3, 4).stream()
                        .map(rank -> BarrierRendezvous.localWorldSize(hosts, rank))
                        .toList());
    }

    @Test
    void theHostIsTheAddressWithoutItsPort() {
        assertEquals("10.0.0.7", BarrierRendezvous.host("10.0.0.7:41231"));
        assertEquals("node-3.example", BarrierRendezvous.host("node-3.example:7077"));
        assertEquals("node-3", BarrierRendezvous.host("node-3"));
    }

    @Test
    void ranksInOneExecutorAreRefusedNamingThemAndTheFix() {
        BarrierRendezvous.requireOwnExecutors(List.of("1", "2", "3"));
        IllegalStateException failure =
                assertThrows(
                        IllegalStateException.class,
                        () -> BarrierRendezvous.requireOwnExecutors(List.of("1", "2", "1")));
        assertEquals(
                "ranks 0 and 2 run in the same executor (1), but a rank that trains in the"
                        + " executor's JVM needs one of its own (DJL's engine is per process): set"
                        + " spark.task.cpus to spark.executor.cores so that each executor runs one"
                        + " task at a time, or run a main class in a JVM per rank (runMain)",
                failure.getMessage());
    }
}
