package ai.djl.fsdp.dist.quant;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.testing.RankProcesses;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Quantized all-gathers and reduce-scatters on real ranks joined by the socket ring, two and three
 * of them (three relay all-to-all pieces through a rank between): every element within its blocks'
 * bound of the exact result ({@link QuantizedCollectivesMain}).
 */
class QuantizedCollectivesTest {

    @ParameterizedTest(name = "world size {0}")
    @ValueSource(ints = {2, 3})
    void quantizedCollectivesStayWithinTheirBlocksBounds(int worldSize) {
        try (RankProcesses job =
                RankProcesses.builder(QuantizedCollectivesMain.class)
                        .worldSize(worldSize)
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            for (RankProcesses.RankResult rank : results.all()) {
                assertTrue(rank.output().contains("OK"), results.describe());
            }
        }
    }
}
