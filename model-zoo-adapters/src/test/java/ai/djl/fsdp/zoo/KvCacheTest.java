package ai.djl.fsdp.zoo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.training.ParameterStore;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Decoding with the key-value cache computes what recomputing the whole sequence computes. */
class KvCacheTest {

    @ParameterizedTest
    @ValueSource(strings = {"gpt2-tiny", "llama-tiny"})
    void cachedDecodingMatchesFullRecompute(String name) {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM model = TestModels.seeded(name, manager, 7);
            NDArray ids = TestModels.tokens(manager, 2, 9, 3);
            NDArray full = TestModels.logits(model, ids, null);

            ParameterStore ps = new ParameterStore(manager, false);
            try (KvCache cache = new KvCache(manager, model.getConfig().numLayers())) {
                // A 5-token prefill, then one token at a time.
                NDArray prefill = model.forward(ps, ids.get(":, :5"), null, cache, false);
                assertTrue(TestModels.maxDiff(prefill, full.get(":, :5")) < 1e-5f);
                for (int t = 5; t < 9; t++) {
                    NDArray step =
                            model.forward(
                                    ps,
                                    ids.get(new NDIndex(":, {}:{}", t, t + 1)),
                                    null,
                                    cache,
                                    false);
                    float diff =
                            TestModels.maxDiff(step, full.get(new NDIndex(":, {}:{}", t, t + 1)));
                    assertTrue(diff < 1e-5f, "position " + t + " differs by " + diff);
                }
                assertEquals(9, cache.length());
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"gpt2-tiny", "llama-tiny"})
    void leftPaddingDoesNotChangeTheRealTokens(String name) {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM model = TestModels.seeded(name, manager, 11);
            NDArray ids = TestModels.tokens(manager, 1, 6, 5);
            NDArray alone = TestModels.logits(model, ids, null);

            NDArray padded =
                    manager.zeros(new ai.djl.ndarray.types.Shape(1, 3), ids.getDataType())
                            .concat(ids, 1);
            NDArray mask = manager.create(new long[] {0, 0, 0, 1, 1, 1, 1, 1, 1}).reshape(1, 9);
            NDArray batched = TestModels.logits(model, padded, mask);
            assertTrue(TestModels.maxDiff(batched.get(":, 3:"), alone) < 1e-5f);
        }
    }
}
