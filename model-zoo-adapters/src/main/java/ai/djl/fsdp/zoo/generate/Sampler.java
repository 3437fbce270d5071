package ai.djl.fsdp.zoo.generate;

import java.util.Arrays;
import java.util.Random;

/**
 * Picks the next token from one position's logits, on the host: greedy, or temperature / top-k /
 * top-p sampling with its own seeded random source (independent of the engine's, so generation is
 * reproducible whatever else runs).
 */
final class Sampler {

    private final GenerationConfig config;
    private final Random random;

    Sampler(GenerationConfig config) {
        this(config, config.getSeed());
    }

    Sampler(GenerationConfig config, long seed) {
        this.config = config;
        random = new Random(seed);
    }

    int next(float[] logits) {
        if (config.getTemperature() == 0) {
            return argmax(logits);
        }
        Integer[] order = new Integer[logits.length];
        Arrays.setAll(order, i -> i);
        Arrays.sort(order, (a, b) -> Float.compare(logits[b], logits[a]));
        int keep = config.getTopK() > 0 ? Math.min(config.getTopK(), logits.length) : logits.length;

        double[] weights = new double[keep];
        double max = logits[order[0]] / config.getTemperature();
        double total = 0;
        for (int i = 0; i < keep; i++) {
            weights[i] = Math.exp(logits[order[i]] / config.getTemperature() - max);
            total += weights[i];
        }
        if (config.getTopP() < 1) {
            // The smallest prefix of the sorted tokens whose probability reaches top_p.
            double cumulative = 0;
            int cut = 0;
            while (cut < keep) {
                cumulative += weights[cut++] / total;
                if (cumulative >= config.getTopP()) {
                    break;
                }
            }
            keep = cut;
            total = 0;
            for (int i = 0; i < keep; i++) {
                total += weights[i];
            }
        }
        double u = random.nextDouble() * total;
        for (int i = 0; i < keep - 1; i++) {
            u -= weights[i];
            if (u < 0) {
                return order[i];
            }
        }
        return order[keep - 1];
    }

    static int argmax(float[] logits) {
        int best = 0;
        for (int i = 1; i < logits.length; i++) {
            if (logits[i] > logits[best]) {
                best = i;
            }
        }
        return best;
    }
}
