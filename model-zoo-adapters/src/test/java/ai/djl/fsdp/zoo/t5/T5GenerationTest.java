package ai.djl.fsdp.zoo.t5;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import ai.djl.engine.Engine;
import ai.djl.fsdp.zoo.EncoderDecoderCache;
import ai.djl.fsdp.zoo.ReferenceChecks;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.generate.GreedyDecoding;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.training.ParameterStore;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * T5's cached decoding computes what the full forward computes: decoder tokens given three at first
 * and then one at a time, each step reading the self-attention keys and values of the earlier ones
 * and the encoder's keys and values projected at the first step only, give the full pass's logits
 * at every position within 1e-5; and greedy generation with the cache picks the tokens that greedy
 * decoding by full passes over the whole prefix picks. A padded source row, both feed-forward kinds
 * and heads.
 */
class T5GenerationTest {

    private static final double TOLERANCE = 1e-5;

    @ParameterizedTest
    @ValueSource(strings = {"relu", "gated-gelu"})
    void cachedDecodingEqualsTheFullForward(String feedForward) {
        try (NDManager manager = TestModels.newManager()) {
            T5ForConditionalGeneration t5 = seeded(manager, feedForward);
            ParameterStore ps = new ParameterStore(manager, false);
            NDList batch = T5ShardedChecks.batch(manager, t5, 0, 0, 4);
            NDArray ids = batch.get(0);
            NDArray mask = batch.get(1);
            NDArray decoderIds = batch.get(2);
            NDArray full = t5.forward(ps, ids, mask, decoderIds, false);
            NDArray encoded = t5.encode(ps, ids, mask, false);
            long length = decoderIds.getShape().get(1);
            try (EncoderDecoderCache cache =
                    new EncoderDecoderCache(manager, t5.getConfig().numDecoderLayers())) {
                NDArray prefix =
                        t5.decode(ps, decoderIds.get(":, 0:3"), encoded, mask, cache, false);
                ReferenceChecks.relativeDifference(
                        feedForward + " prefix", prefix, full.get(":, 0:3, :"), TOLERANCE);
                NDArray crossKeys = cache.crossAttention().past(1, 4, 4, 8).get(0);
                for (long t = 3; t < length; t++) {
                    String step = ":, " + t + ":" + (t + 1);
                    NDArray logits =
                            t5.decode(ps, decoderIds.get(step), encoded, mask, cache, false);
                    ReferenceChecks.relativeDifference(
                            feedForward + " step " + t, logits, full.get(step + ", :"), TOLERANCE);
                }
                assertEquals(length, cache.length());
                assertSame(
                        crossKeys,
                        cache.crossAttention().past(1, 4, 4, 8).get(0),
                        "the encoder's keys are projected once");
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"relu", "gated-gelu"})
    void greedyGenerationPicksWhatFullPassesPick(String feedForward) {
        try (NDManager manager = TestModels.newManager()) {
            T5ForConditionalGeneration t5 = seeded(manager, feedForward);
            ParameterStore ps = new ParameterStore(manager, false);
            NDList batch = T5ShardedChecks.batch(manager, t5, 1, 0, 4);
            int steps = 7;
            List<long[]> generated =
                    GreedyDecoding.generate(t5, ps, batch.get(0), batch.get(1), steps);
            List<Long> eos = t5.getConfig().eosTokenIds();
            for (int row = 0; row < 4; row++) {
                NDArray ids = batch.get(0).get(row + ":" + (row + 1));
                NDArray mask = batch.get(1).get(row + ":" + (row + 1));
                List<Long> expected = new ArrayList<>();
                long[] prefix = {t5.getConfig().decoderStartTokenId()};
                for (int t = 0; t < steps; t++) {
                    NDArray decoder = manager.create(prefix).reshape(1, prefix.length);
                    long next =
                            t5.forward(ps, ids, mask, decoder, false)
                                    .get(":, -1, :")
                                    .argMax(-1)
                                    .toType(DataType.INT64, false)
                                    .getLong();
                    expected.add(next);
                    if (eos.contains(next)) {
                        break;
                    }
                    prefix = append(prefix, next);
                }
                assertArrayEquals(
                        expected.stream().mapToLong(Long::longValue).toArray(),
                        generated.get(row),
                        feedForward + " row " + row);
            }
        }
    }

    private static T5ForConditionalGeneration seeded(NDManager manager, String feedForward) {
        Engine.getEngine("PyTorch").setRandomSeed(3);
        return (T5ForConditionalGeneration)
                Models.createPretrained(T5Config.of(40, 32, 4, 48, 2, 3, feedForward), manager);
    }

    private static long[] append(long[] prefix, long token) {
        long[] longer = Arrays.copyOf(prefix, prefix.length + 1);
        longer[prefix.length] = token;
        return longer;
    }
}
