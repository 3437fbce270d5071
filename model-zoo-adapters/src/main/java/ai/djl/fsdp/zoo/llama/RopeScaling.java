package ai.djl.fsdp.zoo.llama;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import java.util.List;

/**
 * A Llama-family {@code rope_scaling}: how the rotary inverse frequencies {@code theta^(-2i / d)}
 * are rescaled for contexts longer than the model was pretrained on, as Hugging Face's {@code
 * ROPE_INIT_FUNCTIONS} define the types supported here:
 *
 * <ul>
 *   <li>{@code default} (or no {@code rope_scaling}): none.
 *   <li>{@code linear}: every frequency divided by {@code factor} (positions interpolated).
 *   <li>{@code dynamic} (NTK-aware): when a pass reaches past {@code max_position_embeddings}, the
 *       base becomes {@code theta * (factor * n / max - (factor - 1))^(d / (d - 2))} for a sequence
 *       of {@code n}. Hugging Face's module keeps the largest {@code n} it has seen until a
 *       sequence shorter than {@code max_position_embeddings} comes; here each pass uses its own,
 *       which is what a freshly loaded Hugging Face model computes for that pass.
 *   <li>{@code llama3} (Llama 3.1 and later): frequencies whose wavelength is longer than {@code
 *       original_max_position_embeddings / low_freq_factor} divided by {@code factor}, those
 *       shorter than {@code original_max_position_embeddings / high_freq_factor} kept, and those
 *       between blended smoothly.
 * </ul>
 *
 * The arithmetic is float32, step for step as Hugging Face's tensors compute it.
 */
public final class RopeScaling {

    /** The supported {@code rope_type}s. */
    public static final List<String> TYPES = List.of("default", "linear", "dynamic", "llama3");

    private static final RopeScaling NONE = new RopeScaling("default", 1, 0, 0, 0);

    private final String type;
    private final float factor;
    private final float lowFreqFactor;
    private final float highFreqFactor;
    private final long originalMaxPositions;

    private RopeScaling(
            String type,
            float factor,
            float lowFreqFactor,
            float highFreqFactor,
            long originalMaxPositions) {
        this.type = type;
        this.factor = factor;
        this.lowFreqFactor = lowFreqFactor;
        this.highFreqFactor = highFreqFactor;
        this.originalMaxPositions = originalMaxPositions;
    }

    /**
     * Reads {@code rope_scaling}.
     *
     * @param json the value of {@code rope_scaling}, or null
     * @return the scaling
     * @throws IllegalArgumentException naming the key that is missing or wrong, or listing the
     *     supported types
     */
    public static RopeScaling of(JsonElement json) {
        if (json == null || json.isJsonNull()) {
            return NONE;
        }
        if (!json.isJsonObject()) {
            throw new IllegalArgumentException(
                    "rope_scaling must be null or an object with rope_type, got " + json);
        }
        JsonObject object = json.getAsJsonObject();
        JsonElement name = object.has("rope_type") ? object.get("rope_type") : object.get("type");
        String type = name instanceof JsonPrimitive p && p.isString() ? p.getAsString() : null;
        if (type == null || !TYPES.contains(type)) {
            throw new IllegalArgumentException(
                    "rope_scaling "
                            + object
                            + ": rope_type "
                            + name
                            + " is not supported; supported: "
                            + TYPES
                            + " (yarn, longrope and others are not implemented)");
        }
        if (type.equals("default")) {
            return NONE;
        }
        float factor = positive(object, "factor");
        if (!type.equals("llama3")) {
            return new RopeScaling(type, factor, 0, 0, 0);
        }
        float low = positive(object, "low_freq_factor");
        float high = positive(object, "high_freq_factor");
        if (high <= low) {
            throw new IllegalArgumentException(
                    "rope_scaling high_freq_factor "
                            + high
                            + " must be greater than low_freq_factor "
                            + low);
        }
        float original = positive(object, "original_max_position_embeddings");
        if (original != Math.rint(original)) {
            throw new IllegalArgumentException(
                    "rope_scaling original_max_position_embeddings must be an integer, got "
                            + original);
        }
        return new RopeScaling(type, factor, low, high, (long) original);
    }

    private static float positive(JsonObject object, String key) {
        JsonElement value = object.get(key);
        if (!(value instanceof JsonPrimitive p && p.isNumber())) {
            throw new IllegalArgumentException(
                    "rope_scaling of rope_type "
                            + object.get(object.has("rope_type") ? "rope_type" : "type")
                            + " needs a number "
                            + key
                            + ", got "
                            + value);
        }
        float number = p.getAsFloat();
        if (!Float.isFinite(number) || number <= 0) {
            throw new IllegalArgumentException(
                    "rope_scaling " + key + " must be a positive number, got " + value);
        }
        return number;
    }

    /**
     * Returns the {@code rope_type}.
     *
     * @return {@code default}, {@code linear}, {@code dynamic} or {@code llama3}
     */
    public String type() {
        return type;
    }

    /**
     * Returns whether the frequencies depend on the length of the sequence ({@code dynamic}).
     *
     * @return true for {@code dynamic}
     */
    public boolean isDynamic() {
        return type.equals("dynamic");
    }

    /**
     * Returns the inverse frequencies of a pass.
     *
     * @param dim the rotated head size {@code d}
     * @param theta {@code rope_theta}
     * @param maxPositions {@code max_position_embeddings}
     * @param sequence the pass's sequence length (the largest position id plus one); only {@code
     *     dynamic} reads it
     * @return {@code d / 2} inverse frequencies
     */
    public float[] inverseFrequencies(int dim, double theta, long maxPositions, long sequence) {
        float base = (float) theta;
        if (isDynamic() && sequence > maxPositions) {
            float stretch = factor * sequence / maxPositions - (factor - 1);
            base = base * (float) Math.pow(stretch, (double) dim / (dim - 2));
        }
        float[] inverse = new float[dim / 2];
        for (int i = 0; i < inverse.length; i++) {
            inverse[i] = 1f / (float) Math.pow(base, (float) (2 * i) / dim);
            if (type.equals("linear")) {
                inverse[i] /= factor;
            } else if (type.equals("llama3")) {
                inverse[i] = llama3(inverse[i]);
            }
        }
        return inverse;
    }

    /** Llama 3's rescaling of one inverse frequency, by its wavelength. */
    private float llama3(float inverse) {
        float wavelength = (1f / inverse) * (float) (2 * Math.PI);
        float lowFreqWavelength = (float) ((double) originalMaxPositions / lowFreqFactor);
        float highFreqWavelength = (float) ((double) originalMaxPositions / highFreqFactor);
        if (wavelength < highFreqWavelength) {
            return inverse;
        }
        if (wavelength > lowFreqWavelength) {
            return inverse / factor;
        }
        float smooth =
                ((1f / wavelength) * originalMaxPositions - lowFreqFactor)
                        / (highFreqFactor - lowFreqFactor);
        return (1 - smooth) * inverse / factor + smooth * inverse;
    }
}
