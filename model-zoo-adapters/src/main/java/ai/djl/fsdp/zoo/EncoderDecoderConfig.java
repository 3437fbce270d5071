package ai.djl.fsdp.zoo;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

/**
 * The configuration of an encoder-decoder model (T5): what preparing its data and generating with
 * it need to know beyond a {@link ModelConfig}, its special token ids and its decoder's depth.
 *
 * <p>Block forward contract of such a model: {@code NDList(inputIds [B, S] int64 [, attentionMask
 * [B, S]], decoderInputIds [B, T] int64)} to {@code NDList(logits [B, T, vocab])}, the decoder's
 * inputs the labels shifted right ({@link #shiftRight}); with an {@link EncoderDecoderCache} in the
 * call's parameters a call is one generation step, {@code decoderInputIds} the step's new tokens.
 */
public interface EncoderDecoderConfig extends ModelConfig {

    /**
     * Returns {@code decoder_start_token_id}: the decoder's first input.
     *
     * @return the decoder's start token
     */
    long decoderStartTokenId();

    /**
     * Returns {@code pad_token_id}: what pads sources and what shifted labels hold where a label is
     * ignored.
     *
     * @return the padding token
     */
    long padTokenId();

    /**
     * Returns the end-of-sequence token that ends sources and targets: the first of {@link
     * #eosTokenIds()}.
     *
     * @return the end-of-sequence token
     * @throws IllegalStateException if the configuration names none
     */
    default long eosTokenId() {
        if (eosTokenIds().isEmpty()) {
            throw new IllegalStateException(
                    "model_type " + modelType() + " has no eos_token_id: set it in config.json");
        }
        return eosTokenIds().get(0);
    }

    /**
     * Returns the number of decoder layers, what a generation cache holds a slot for.
     *
     * @return the decoder's layers
     */
    int numDecoderLayers();

    @Override
    default boolean isEncoderDecoder() {
        return true;
    }

    /**
     * Returns the decoder's inputs for labels, as Hugging Face's {@code _shift_right}: {@code
     * decoder_start_token_id}, then each label but the last, an ignored label (-100) read as {@code
     * pad_token_id}.
     *
     * @param labels the labels {@code [B, T]}, int64, -100 where ignored
     * @return the decoder's inputs {@code [B, T]}, int64, in the labels' manager
     */
    default NDArray shiftRight(NDArray labels) {
        long batch = labels.getShape().get(0);
        long length = labels.getShape().get(1);
        NDManager manager = labels.getManager();
        NDArray start = manager.full(new Shape(batch, 1), decoderStartTokenId(), DataType.INT64);
        NDArray shifted =
                start.concat(labels.toType(DataType.INT64, false).get(":, 0:" + (length - 1)), 1);
        NDArray ignored = shifted.eq(-100).toType(DataType.INT64, false);
        return shifted.mul(ignored.neg().add(1)).add(ignored.mul(padTokenId()));
    }
}
