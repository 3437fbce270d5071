package ai.djl.fsdp.bench.train;

import ai.djl.fsdp.bench.gpt.GptShape;
import ai.djl.fsdp.zoo.ModelConfig;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.util.Arrays;
import java.util.Locale;

/**
 * The model family {@code bench train --model} trains at the shape of {@code --layers}, {@code
 * --width}, {@code --heads}, {@code --vocab} and {@code --seq} ({@code max_position_embeddings}).
 * GPT-2 as before; the families built on Llama's block with their released models' proportions: one
 * key-value head per 4 query heads where the heads divide by 4 (else one each), an MLP of {@code
 * 8/3} the width rounded up to a multiple of 64 (or {@code --intermediate}), and each family's
 * features on: Llama 3's llama3 RoPE scaling (original length half the sequence) and untied head;
 * Mistral's sliding window of half the sequence; Qwen2's q/k/v biases and tied head; Qwen3's q/k
 * norms and tied head.
 */
enum BenchModel {
    GPT2,
    LLAMA,
    MISTRAL,
    QWEN2,
    QWEN3;

    /**
     * Returns the model of a {@code --model} value.
     *
     * @param name {@code gpt2}, {@code llama}, {@code mistral}, {@code qwen2} or {@code qwen3}
     * @return the model
     * @throws IllegalArgumentException naming the values accepted
     */
    static BenchModel of(String name) {
        for (BenchModel model : values()) {
            if (model.getName().equals(name)) {
                return model;
            }
        }
        throw new IllegalArgumentException(
                "--model must be one of "
                        + Arrays.stream(values()).map(BenchModel::getName).toList()
                        + ", got "
                        + name);
    }

    /**
     * Returns the {@code --model} value, the family's {@code model_type}.
     *
     * @return the name
     */
    String getName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * Returns the configuration of this family at a shape, dropout off.
     *
     * @param shape the shape
     * @param intermediate the MLP's width; 0 for the family's proportion
     * @return the configuration
     */
    ModelConfig config(GptShape shape, int intermediate) {
        if (this == GPT2) {
            return shape.modelConfig();
        }
        int window = Math.max(1, shape.sequence() / 2);
        JsonObject json = new JsonObject();
        json.addProperty("model_type", getName());
        json.addProperty("vocab_size", shape.vocab());
        json.addProperty("hidden_size", shape.width());
        json.addProperty("intermediate_size", intermediate(shape, intermediate));
        json.addProperty("num_hidden_layers", shape.layers());
        json.addProperty("num_attention_heads", shape.heads());
        json.addProperty("num_key_value_heads", kvHeads(shape));
        json.addProperty("head_dim", shape.width() / shape.heads());
        json.addProperty("max_position_embeddings", shape.sequence());
        json.addProperty("tie_word_embeddings", this == QWEN2 || this == QWEN3);
        if (this == LLAMA) {
            json.addProperty("rope_theta", 500000.0);
            json.add(
                    "rope_scaling",
                    JsonParser.parseString(
                            "{\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0,"
                                    + " \"high_freq_factor\": 4.0,"
                                    + " \"original_max_position_embeddings\": "
                                    + window
                                    + "}"));
        } else if (this == MISTRAL) {
            json.addProperty("sliding_window", window);
        } else {
            json.addProperty("rope_theta", 1e6);
        }
        return ModelFamilies.parse(json);
    }

    /**
     * Returns the model FLOPs of training on one token: the matrix products of forward, three times
     * (backward computes two products per forward product). Forward per layer: the projections
     * ({@code 24 C^2} for GPT-2; for the others {@code 2 C} times the query, key, value and output
     * widths plus {@code 6 C I} for the gated MLP) and {@code 4 T H D} (scores and weighted values,
     * counted in full although causal attention needs half, as PaLM's model FLOPs utilization
     * counts them); the head {@code 2 C V}. Recompute is not counted: these are the model's FLOPs,
     * not the hardware's.
     *
     * @param shape the shape
     * @param intermediate the MLP's width; 0 for the family's proportion
     * @return FLOPs per token
     */
    double flopsPerToken(GptShape shape, int intermediate) {
        double c = shape.width();
        double attention = 4.0 * shape.sequence() * c;
        double projections;
        if (this == GPT2) {
            projections = 24 * c * c;
        } else {
            double kv = (double) kvHeads(shape) * (shape.width() / shape.heads());
            projections = 2 * c * (2 * c + 2 * kv) + 6 * c * intermediate(shape, intermediate);
        }
        return 3 * (shape.layers() * (projections + attention) + 2 * c * shape.vocab());
    }

    private static int kvHeads(GptShape shape) {
        return shape.heads() % 4 == 0 ? shape.heads() / 4 : shape.heads();
    }

    private static int intermediate(GptShape shape, int given) {
        if (given > 0) {
            return given;
        }
        int inner = (8 * shape.width() + 2) / 3;
        return (inner + 63) / 64 * 64;
    }
}
