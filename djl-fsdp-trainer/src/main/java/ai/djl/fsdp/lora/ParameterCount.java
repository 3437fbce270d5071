package ai.djl.fsdp.lora;

import java.util.Locale;

/**
 * Trainable and total parameter counts.
 *
 * @param trainable the number of trainable elements
 * @param all the number of elements
 */
public record ParameterCount(long trainable, long all) {

    /**
     * Returns PEFT's summary line: {@code trainable params: X || all params: Y || trainable%: Z}.
     *
     * @return the summary
     */
    @Override
    public String toString() {
        return String.format(
                Locale.ROOT,
                "trainable params: %,d || all params: %,d || trainable%%: %.4f",
                trainable,
                all,
                all == 0 ? 0.0 : 100.0 * trainable / all);
    }
}
