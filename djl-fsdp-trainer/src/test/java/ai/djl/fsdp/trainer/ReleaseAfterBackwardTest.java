package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.fsdp.testing.RankProcesses;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * A recomputed unit's graph, with the views that keep its gathered parameters alive, is freed as
 * soon as its backward has handed its inputs' gradients on, as FSDP2 reshards after each unit's
 * backward: when the unit before it is recomputed, nothing of its graph is alive, though its
 * gradient reduction may still be in flight. (Kept until that reduction completed, each unit's
 * gathered parameters stayed beside the next two units': on a Flan-T5-large shape, the untied head
 * of 0.13 GB beside the last two decoder blocks.) A unit no gradient can reach (frozen, on the
 * data) is not run again in backward at all.
 */
class ReleaseAfterBackwardTest {

    @Test
    void nothingOfAUnitsGraphOutlivesItsBackward() {
        try (RankProcesses job =
                RankProcesses.builder(ReleaseAfterBackwardRankMain.class)
                        .worldSize(2)
                        .timeout(Duration.ofMinutes(2))
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            for (RankProcesses.RankResult rank : results.all()) {
                int recomputes =
                        ReleaseAfterBackwardRankMain.UNITS * ReleaseAfterBackwardRankMain.STEPS;
                // The frozen unit runs twice a step in forward and never in backward.
                int frozenCalls = 2 * ReleaseAfterBackwardRankMain.STEPS;
                assertEquals(
                        "recomputes="
                                + recomputes
                                + " alive=0 frozenCalls="
                                + frozenCalls
                                + " frozenRecomputes=0",
                        lastLine(rank.output()),
                        "rank " + rank.rank());
            }
        }
    }

    private static String lastLine(String output) {
        String[] lines = output.strip().split("\n");
        return lines[lines.length - 1].strip();
    }
}
