package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.engine.Engine;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.testing.RankProcesses;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * CPU offload and unit-by-unit initialization on the CPU path (host and device are both the CPU):
 * the trainer's initialization equals DJL's bit for bit while holding at most the root and one unit
 * whole; offload trains exactly as without it; and the memory figures say what each rank holds for
 * shards, gradients, optimizer state and gathered buffers, with and without offload and frozen
 * parameters (which get no gradient and no optimizer state).
 */
class OffloadAndInitializationTest {

    private static final int WORLD = 2;

    @Test
    void initializesUnitByUnitAsDjlDoesOnOneRank() {
        Map<String, float[]> reference = OffloadRun.referenceInitialization(false);
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            OffloadRun.Result deferred = new OffloadRun(false, false, true, 0).run(group);
            OffloadRun.Result whole = new OffloadRun(false, false, false, 0).run(group);
            OffloadRun.Result offloaded = new OffloadRun(true, false, true, 0).run(group);
            assertSameValues("unit by unit", reference, deferred.parameters());
            assertSameValues("whole", reference, whole.parameters());
            assertSameValues("unit by unit, offloaded", reference, offloaded.parameters());
            assertInitPeaks(deferred, whole);
        }
    }

    @Test
    void offloadOnTwoRanks(@TempDir Path directory) throws Exception {
        List<OffloadRun> runs =
                List.of(
                        new OffloadRun(false, false, true, 0),
                        new OffloadRun(false, false, false, 0),
                        new OffloadRun(false, false, true, 3),
                        new OffloadRun(true, false, true, 3),
                        new OffloadRun(false, true, true, 3),
                        new OffloadRun(true, true, true, 3),
                        new OffloadRun(true, false, true, 0, true));
        List<String> args = new ArrayList<>();
        args.add(directory.toString());
        runs.forEach(run -> args.add(OffloadRankMain.format(run)));
        try (RankProcesses job =
                RankProcesses.builder(OffloadRankMain.class)
                        .worldSize(WORLD)
                        .args(args.toArray(new String[0]))
                        .timeout(Duration.ofMinutes(4))
                        .start()) {
            job.await().assertAllSucceeded();
        }
        List<List<OffloadRun.Result>> results = new ArrayList<>();
        for (int i = 0; i < runs.size(); i++) {
            List<OffloadRun.Result> ranks = new ArrayList<>();
            for (int rank = 0; rank < WORLD; rank++) {
                ranks.add(OffloadRun.read(directory.resolve((i + 1) + "-rank" + rank)));
            }
            results.add(ranks);
        }
        Map<String, float[]> reference = OffloadRun.referenceInitialization(false);
        for (int rank = 0; rank < WORLD; rank++) {
            // Rank 0's values, broadcast: DJL's initialization of the same seed, bit for bit.
            assertSameValues(
                    "unit by unit, rank " + rank, reference, results.get(0).get(rank).parameters());
            assertSameValues(
                    "whole, rank " + rank, reference, results.get(1).get(rank).parameters());
            assertInitPeaks(results.get(0).get(rank), results.get(1).get(rank));
            // Only rank 0 draws the values it sends; rank 1 draws none of its own.
            assertEquals(
                    rank == 0 ? 1L : 0L,
                    results.get(0).get(rank).figures().get("drewAtStart"),
                    "rank " + rank + " drew values at the start");
        }
        for (int pair = 1; pair <= 2; pair++) {
            for (int rank = 0; rank < WORLD; rank++) {
                OffloadRun.Result kept = results.get(2 * pair).get(rank);
                OffloadRun.Result offloaded = results.get(2 * pair + 1).get(rank);
                String what = runs.get(2 * pair + 1).describe() + ", rank " + rank;
                // Host and device are one on the CPU: the same arithmetic, the same bits.
                assertArrayEquals(kept.losses(), offloaded.losses(), what);
                assertSameValues(what, kept.parameters(), offloaded.parameters());
                assertAccounting(what, kept, false);
                assertAccounting(what, offloaded, true);
                assertEquals(kept.memory().shardBytes(), offloaded.memory().shardBytes(), what);
                assertEquals(
                        kept.memory().peakGatheredBytes(),
                        offloaded.memory().peakGatheredBytes(),
                        what);
                System.out.printf(
                        "rank %d %s: shards %d, gradients %d, optimizer state %d, gathered peak %d;"
                                + " device %d without offload, device %d + host %d with it;"
                                + " init peak %d of %d%n",
                        rank,
                        runs.get(2 * pair + 1).mostlyFrozen() ? "mostly frozen" : "all trainable",
                        kept.memory().shardBytes(),
                        kept.memory().gradientBytes(),
                        kept.memory().optimizerStateBytes(),
                        kept.memory().peakGatheredBytes(),
                        kept.memory().deviceBytes(),
                        offloaded.memory().deviceBytes(),
                        offloaded.memory().hostBytes(),
                        offloaded.memory().initPeakParameterBytes(),
                        offloaded.figures().get("total"));
            }
        }
        // From a source (a checkpoint), each rank reads its shard's elements alone.
        long elements = 0;
        for (int rank = 0; rank < WORLD; rank++) {
            OffloadRun.Result loaded = results.get(6).get(rank);
            Map<String, float[]> negated = new LinkedHashMap<>();
            reference.forEach(
                    (name, values) -> {
                        float[] minus = new float[values.length];
                        for (int i = 0; i < values.length; i++) {
                            minus[i] = -values[i];
                        }
                        negated.put(name, minus);
                    });
            assertSameValues("from the source, rank " + rank, negated, loaded.parameters());
            long read = loaded.figures().get("elementsRead");
            assertTrue(read < loaded.figures().get("total") / 4, "rank " + rank + " read " + read);
            elements += read;
        }
        assertEquals(
                results.get(6).get(0).figures().get("total") / 4,
                elements,
                "the ranks read every element once between them");
        // Frozen parameters cost no gradient and no optimizer state, offloaded or not.
        for (int rank = 0; rank < WORLD; rank++) {
            MemoryStats trainable = results.get(2).get(rank).memory();
            MemoryStats frozen = results.get(4).get(rank).memory();
            MemoryStats frozenOffloaded = results.get(5).get(rank).memory();
            assertEquals(trainable.shardBytes(), frozen.shardBytes());
            assertTrue(frozen.gradientBytes() < trainable.gradientBytes() / 2, frozen.toString());
            assertTrue(frozen.optimizerStateBytes() < trainable.optimizerStateBytes() / 2);
            assertTrue(frozenOffloaded.deviceBytes() < frozen.deviceBytes());
        }
    }

    @Test
    void offloadsToHostMemoryOnAGpu() {
        assumeTrue(
                Engine.getInstance().getGpuCount() > 0,
                "No CUDA GPU is visible to libtorch: the GPU offload check (shards copied to the"
                    + " device for each gather, gradients back) runs on a GPU host with -Pcuda");
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            OffloadRun.Result kept = new OffloadRun(false, true, true, 3).run(group);
            OffloadRun.Result offloaded = new OffloadRun(true, true, true, 3).run(group);
            for (int step = 0; step < kept.losses().length; step++) {
                assertEquals(kept.losses()[step], offloaded.losses()[step], 1e-4, "step " + step);
            }
            assertAccounting("GPU", kept, false);
            assertAccounting("GPU", offloaded, true);
        }
    }

    private static void assertInitPeaks(OffloadRun.Result deferred, OffloadRun.Result whole) {
        Map<String, Long> figures = deferred.figures();
        long total = figures.get("total");
        // TinyLm's root parameters come first in DJL's walk: the peak is the root and one unit.
        assertEquals(
                figures.get("root") + figures.get("largestUnit"),
                deferred.memory().initPeakParameterBytes(),
                "unit by unit: the root and the largest unit");
        assertTrue(deferred.memory().initPeakParameterBytes() < total);
        assertEquals(total, whole.memory().initPeakParameterBytes(), "whole: the model");
    }

    private static void assertAccounting(String what, OffloadRun.Result result, boolean offload) {
        MemoryStats memory = result.memory();
        Map<String, Long> figures = result.figures();
        assertEquals(offload, memory.cpuOffload(), what);
        assertEquals(figures.get("trainableShards"), memory.gradientBytes(), what + ": gradients");
        // AdamW keeps two moments per trainable element, nothing for frozen ones.
        assertEquals(2 * memory.gradientBytes(), memory.optimizerStateBytes(), what + ": AdamW");
        assertTrue(memory.peakGatheredBytes() > 0, what);
        assertTrue(memory.peakGatheredBytes() <= figures.get("gatheredBound"), what);
        if (offload) {
            assertEquals(memory.modelStateBytes(), memory.hostBytes(), what);
            assertEquals(memory.peakGatheredBytes(), memory.deviceBytes(), what);
        } else {
            assertEquals(0, memory.hostBytes(), what);
            assertEquals(
                    memory.modelStateBytes() + memory.peakGatheredBytes(),
                    memory.deviceBytes(),
                    what);
        }
    }

    private static void assertSameValues(
            String what, Map<String, float[]> expected, Map<String, float[]> actual) {
        assertEquals(expected.keySet(), actual.keySet(), what);
        for (Map.Entry<String, float[]> entry : expected.entrySet()) {
            assertArrayEquals(
                    entry.getValue(), actual.get(entry.getKey()), what + ": " + entry.getKey());
        }
    }
}
