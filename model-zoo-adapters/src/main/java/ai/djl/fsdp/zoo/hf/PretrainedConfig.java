package ai.djl.fsdp.zoo.hf;

import ai.djl.fsdp.zoo.ModelConfig;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import java.util.List;

/**
 * The keys every family's {@code config.json} shares, as Hugging Face's {@code PretrainedConfig}
 * holds them: the vocabulary size, the special token ids, whether the head is tied to the token
 * embedding, the initializer's standard deviation. A family's configuration extends it with its own
 * keys, bound by {@link ConfigJson#bind}.
 */
public abstract class PretrainedConfig implements ModelConfig {

    private int vocabSize;
    private float initializerRange = 0.02f;
    private boolean tieWordEmbeddings;
    private JsonElement bosTokenId;
    private JsonElement eosTokenId;

    /**
     * Creates a configuration for the binder to fill.
     *
     * @param tieWordEmbeddings the family's default of {@code tie_word_embeddings}
     */
    protected PretrainedConfig(boolean tieWordEmbeddings) {
        this.tieWordEmbeddings = tieWordEmbeddings;
    }

    @Override
    public int vocabSize() {
        return vocabSize;
    }

    @Override
    public List<Long> eosTokenIds() {
        return ConfigJson.tokenIds(eosTokenId);
    }

    /**
     * Sets {@code bos_token_id} and {@code eos_token_id} where the file has none, to the family's
     * defaults.
     *
     * @param bos the default {@code bos_token_id}
     * @param eos the default {@code eos_token_id}
     */
    protected void defaultTokenIds(long bos, long eos) {
        if (bosTokenId == null || bosTokenId.isJsonNull()) {
            bosTokenId = new JsonPrimitive(bos);
        }
        if (eosTokenId == null || eosTokenId.isJsonNull()) {
            eosTokenId = new JsonPrimitive(eos);
        }
    }

    /**
     * Returns {@code tie_word_embeddings}.
     *
     * @return whether the head shares the token embedding
     */
    public boolean tieWordEmbeddings() {
        return tieWordEmbeddings;
    }

    /**
     * Returns {@code initializer_range}, the standard deviation of fresh weights.
     *
     * @return the initializer range
     */
    public float initializerRange() {
        return initializerRange;
    }

    @Override
    public JsonObject toJson() {
        return ConfigJson.toJson(this, family());
    }
}
