package ai.djl.fsdp.bench.gpt;

import ai.djl.fsdp.zoo.gpt2.GPT2Config;
import com.google.gson.JsonObject;

/**
 * The GPT-2 a benchmark trains and the batch it trains on.
 *
 * @param layers GPT-2 blocks ({@code n_layer})
 * @param width hidden width ({@code n_embd})
 * @param heads attention heads ({@code n_head})
 * @param vocab vocabulary size ({@code vocab_size})
 * @param sequence tokens per sequence, also the model's {@code n_positions}
 * @param batch sequences per rank per step
 */
public record GptShape(int layers, int width, int heads, int vocab, int sequence, int batch) {

    /**
     * Rejects a shape the model zoo's GPT-2 cannot have, before any rank starts.
     *
     * @throws IllegalArgumentException naming the options and what they must be
     */
    public void check() {
        if (layers < 1 || width < 1 || heads < 1 || vocab < 2 || sequence < 1 || batch < 1) {
            throw new IllegalArgumentException(
                    "--layers, --width, --heads, --seq and --batch must be positive, --vocab > 1");
        }
        if (width % heads != 0) {
            throw new IllegalArgumentException(
                    "--width " + width + " must be a multiple of --heads " + heads);
        }
    }

    /**
     * Returns the model-zoo GPT-2 configuration of this shape. Dropout is off: it would add
     * random-mask work that does not depend on the sharding, and the baseline and FSDP runs should
     * compute the same function.
     *
     * @return the configuration, {@code n_positions} the sequence length
     */
    public GPT2Config modelConfig() {
        JsonObject json = new JsonObject();
        json.addProperty("model_type", GPT2Config.MODEL_TYPE);
        json.addProperty("vocab_size", vocab);
        json.addProperty("n_positions", sequence);
        json.addProperty("n_embd", width);
        json.addProperty("n_layer", layers);
        json.addProperty("n_head", heads);
        json.addProperty("resid_pdrop", 0f);
        json.addProperty("embd_pdrop", 0f);
        json.addProperty("attn_pdrop", 0f);
        return GPT2Config.fromJson(json);
    }
}
