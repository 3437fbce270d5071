package ai.djl.fsdp.bench.gpt;

import picocli.CommandLine.Option;

/**
 * The options every GPT-2 benchmark shares (a picocli mixin): the model's shape, the batch and the
 * untimed training steps first. A command passes its defaults to the constructor (picocli shows a
 * field's initial value as its default); the rank it starts parses the values the command re-emits
 * ({@link ai.djl.fsdp.bench.ranks.BenchRanks#rankCommand}) with this same mixin.
 */
public final class GptOptions {

    @Option(
            names = "--warmup",
            description = "Untimed training steps first (default: ${DEFAULT-VALUE}).")
    private int warmup;

    @Option(names = "--layers", description = "Layers (default: ${DEFAULT-VALUE}).")
    private int layers;

    @Option(names = "--width", description = "Width (default: ${DEFAULT-VALUE}).")
    private int width;

    @Option(names = "--heads", description = "Heads (default: ${DEFAULT-VALUE}).")
    private int heads;

    @Option(names = "--vocab", description = "Vocabulary (default: ${DEFAULT-VALUE}).")
    private int vocab;

    @Option(
            names = "--seq",
            description = "Tokens per training sequence (default: ${DEFAULT-VALUE}).")
    private int sequence;

    @Option(
            names = "--batch",
            description = "Sequences per rank per step (default: ${DEFAULT-VALUE}).")
    private int batch;

    /** Makes the options of a rank, whose values all come from its command line. */
    public GptOptions() {}

    /**
     * Makes the options of a command with its defaults.
     *
     * @param warmup the default {@code --warmup}
     * @param shape the default model shape and batch
     */
    public GptOptions(int warmup, GptShape shape) {
        this.warmup = warmup;
        layers = shape.layers();
        width = shape.width();
        heads = shape.heads();
        vocab = shape.vocab();
        sequence = shape.sequence();
        batch = shape.batch();
    }

    /**
     * Returns the untimed training steps before the measurements.
     *
     * @return {@code --warmup}
     */
    public int warmup() {
        return warmup;
    }

    /**
     * Returns the model's shape and the batch.
     *
     * @return {@code --layers}, {@code --width}, {@code --heads}, {@code --vocab}, {@code --seq}
     *     and {@code --batch}
     */
    public GptShape shape() {
        return new GptShape(layers, width, heads, vocab, sequence, batch);
    }
}
