package ai.djl.fsdp.zoo.generate;

import ai.djl.fsdp.tensor.OwnedArrays;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.KvCache;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.ParameterStore;
import java.util.Arrays;

/**
 * Autoregressive decoding of one sequence with a key-value cache: the prompt is processed once,
 * then each step feeds only the newest token.
 *
 * <pre>{@code
 * long[] next = new Generator(model).generate(manager, promptIds,
 *         GenerationConfig.builder().optMaxNewTokens(20).optTemperature(0.8f).optTopP(0.95f).build());
 * }</pre>
 */
public final class Generator {

    private final CausalLM model;

    /**
     * Creates a generator.
     *
     * @param model an initialized model
     */
    public Generator(CausalLM model) {
        this.model = model;
    }

    /**
     * Generates tokens after a prompt.
     *
     * @param manager the manager for the cache and the work arrays (all freed before returning)
     * @param prompt the prompt's token ids, at least one
     * @param config how to pick tokens
     * @return the generated tokens (without the prompt), ending early after a stop token or when
     *     the model's positions run out
     */
    public long[] generate(NDManager manager, long[] prompt, GenerationConfig config) {
        if (prompt.length == 0) {
            throw new IllegalArgumentException(
                    "the prompt is empty: generation needs at least one token");
        }
        int budget =
                Math.min(
                        config.getMaxNewTokens(), model.getConfig().maxPositions() - prompt.length);
        if (budget < 0) {
            throw new IllegalArgumentException(
                    "the prompt has "
                            + prompt.length
                            + " tokens, more than the model's "
                            + model.getConfig().maxPositions()
                            + " positions");
        }
        Sampler sampler = new Sampler(config);
        long[] generated = new long[budget];
        int count = 0;
        try (NDManager scope = manager.newSubManager();
                KvCache cache = new KvCache(scope, model.getConfig().numLayers())) {
            ParameterStore ps = new ParameterStore(scope, false);
            long[] input = prompt;
            while (count < budget) {
                float[] logits;
                try (NDManager step = scope.newSubManager()) {
                    NDArray ids = OwnedArrays.create(step, input, new Shape(1, input.length));
                    NDArray out = model.forward(ps, ids, null, cache, false);
                    logits = out.get(0, input.length - 1).toFloatArray();
                }
                long token = sampler.next(logits);
                generated[count++] = token;
                if (config.getStopTokens().contains(token)) {
                    break;
                }
                input = new long[] {token};
            }
        }
        return Arrays.copyOf(generated, count);
    }
}
