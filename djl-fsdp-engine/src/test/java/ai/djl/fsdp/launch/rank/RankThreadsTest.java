package ai.djl.fsdp.launch.rank;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The threads of each rank: the cores shared out, oversubscription named, Slurm's share. */
class RankThreadsTest {

    @AfterEach
    void clearProperties() {
        System.clearProperty(RankThreads.THREADS_PROPERTY);
        System.clearProperty(RankThreads.INTEROP_THREADS_PROPERTY);
    }

    @Test
    void theCoresAreSharedAndOversubscriptionIsNamedInOneLine() {
        assertEquals(new RankThreads(4, null), RankThreads.forNode(null, 2, 8, Map.of()));
        assertEquals(new RankThreads(1, null), RankThreads.forNode(null, 2, 2, Map.of()));

        RankThreads eight = RankThreads.forNode(null, 8, 2, Map.of());
        assertEquals(1, eight.perRank(), "as torchrun: one thread per rank");
        assertTrue(
                eight.note()
                        .startsWith(
                                "8 ranks on 2 cores: 1 intra-op thread per rank"
                                        + " (OMP_NUM_THREADS=1"),
                eight.note());
        assertEquals(1, eight.note().lines().count());

        RankThreads asked = RankThreads.forNode(4, 2, 2, Map.of());
        assertEquals(4, asked.perRank(), "the flag is kept");
        assertTrue(
                asked.note()
                        .contains(
                                "2 ranks x 4 intra-op threads (--threads-per-rank) exceed"
                                        + " the 2 cores"),
                asked.note());
        assertTrue(asked.note().endsWith("1 per rank would fit"), asked.note());

        assertEquals(
                new RankThreads(3, null),
                RankThreads.forNode(null, 2, 8, Map.of("OMP_NUM_THREADS", "3")),
                "the environment's OMP_NUM_THREADS is kept, as torchrun keeps it");
        assertTrue(
                RankThreads.forNode(null, 2, 2, Map.of("OMP_NUM_THREADS", "2"))
                        .note()
                        .contains("(OMP_NUM_THREADS in the environment)"));
    }

    @Test
    void aSlurmTaskTakesItsShareOfTheNode() {
        Map<String, String> slurm =
                Map.of(
                        "SLURM_PROCID", "1",
                        "SLURM_NTASKS", "4",
                        "SLURM_LOCALID", "1",
                        "SLURM_NTASKS_PER_NODE", "2",
                        "SLURM_NODEID", "0",
                        "SLURM_JOB_ID", "77",
                        "MASTER_ADDR", "node0",
                        "DJL_FSDP_JOB_TOKEN", "secret");
        assertEquals(8, RankThreads.applyToSlurmTask(slurm, 16), "16 cores, 2 tasks per node");
        assertEquals("8", System.getProperty(RankThreads.THREADS_PROPERTY));
        assertEquals("1", System.getProperty(RankThreads.INTEROP_THREADS_PROPERTY));
        assertNull(RankThreads.applyToSlurmTask(slurm, 16), "a property already set is kept");
        clearProperties();

        Map<String, String> withCpus = new java.util.HashMap<>(slurm);
        withCpus.put("SLURM_CPUS_PER_TASK", "3");
        assertEquals(3, RankThreads.applyToSlurmTask(withCpus, 16));
        clearProperties();

        assertNull(RankThreads.applyToSlurmTask(Map.of(), 16), "outside Slurm nothing is set");
        assertNull(System.getProperty(RankThreads.THREADS_PROPERTY));
    }
}
