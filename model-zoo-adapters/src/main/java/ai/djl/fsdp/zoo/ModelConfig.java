package ai.djl.fsdp.zoo;

import com.google.gson.JsonObject;
import java.util.List;

/**
 * A Hugging Face {@code config.json} of a supported model: a decoder-only language model ({@link
 * CausalLM}) or the encoder-decoder T5.
 */
public interface ModelConfig {

    /**
     * Returns the family: its {@code model_type}, architecture and decoder layer class.
     *
     * @return the family
     */
    ModelFamily family();

    /**
     * Returns {@code model_type}, such as {@code gpt2} or {@code llama}.
     *
     * @return the model type
     */
    default String modelType() {
        return family().modelType();
    }

    /**
     * Returns the vocabulary size.
     *
     * @return the vocabulary size
     */
    int vocabSize();

    /**
     * Returns the width of the hidden states ({@code hidden_size}, GPT-2's {@code n_embd}).
     *
     * @return the hidden size
     */
    int hiddenSize();

    /**
     * Returns the number of decoder layers.
     *
     * @return the layer count
     */
    int numLayers();

    /**
     * Returns the longest sequence the model's positions cover.
     *
     * @return the maximum number of positions
     */
    int maxPositions();

    /**
     * Returns the token ids that end a generated sequence (may be empty).
     *
     * @return the end-of-sequence ids
     */
    List<Long> eosTokenIds();

    /**
     * Builds a model of this architecture with freshly initialized-on-demand parameters.
     *
     * @return the model
     */
    PretrainedModel newModel();

    /**
     * Returns whether the family is an encoder-decoder model (T5) rather than a decoder-only one.
     *
     * @return true for an encoder-decoder family
     */
    default boolean isEncoderDecoder() {
        return false;
    }

    /**
     * Checks that the family is a decoder-only language model, what the code that takes only {@link
     * CausalLM}s needs: {@link #newCausalLM} ({@code Models.create}, {@code bench train}) and
     * {@code Models.forCheckpoint} ({@code bench}'s load measurement). {@code generate} and {@code
     * finetune} take encoder-decoder models too and do not call it.
     *
     * @throws IllegalArgumentException naming the family when it is an encoder-decoder one
     */
    default void requireDecoderOnly() {
        if (isEncoderDecoder()) {
            throw new IllegalArgumentException(
                    "model_type "
                            + modelType()
                            + " is an encoder-decoder model ("
                            + family().architecture()
                            + "): this takes decoder-only (causal) language models; load it with"
                            + " Models.loadPretrained");
        }
    }

    /**
     * Builds a model of this architecture that must be a decoder-only language model.
     *
     * @return the model
     * @throws IllegalArgumentException naming the family when it is an encoder-decoder one
     */
    default CausalLM newCausalLM() {
        requireDecoderOnly();
        return (CausalLM) newModel();
    }

    /**
     * Returns the configuration as {@code config.json} would hold it, with {@code model_type} and
     * {@code architectures}.
     *
     * @return the JSON object
     */
    JsonObject toJson();
}
