package ai.djl.fsdp.zoo.sharded;

import ai.djl.fsdp.safetensors.Dtype;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How {@code finetune} writes the saved model, and where {@code generate} finds it: the output's
 * layout ({@link #MERGED}, {@link #BASE}), {@code --save_dtype} (the base's {@code torch_dtype}
 * unless asked otherwise, as Hugging Face saves) and {@code --max_shard_size} (Hugging Face's size
 * strings).
 */
public final class SaveFormat {

    /** The subdirectory of a LoRA run's output that holds the merged model. */
    public static final String MERGED = "merged";

    /**
     * The subdirectory of a LoRA run's output that holds the base model with {@code
     * --save_base_model}.
     */
    public static final String BASE = "base";

    private static final Pattern SIZE =
            Pattern.compile("(\\d+(?:\\.\\d+)?)\\s*(B|KB|MB|GB|TB|KIB|MIB|GIB|TIB)?");

    private SaveFormat() {}

    /**
     * Returns the element type the saved model's floating tensors are stored in.
     *
     * @param flag {@code auto}, {@code float32}, {@code bfloat16} or {@code float16}
     * @param checkpoint the base checkpoint directory, or null for a built-in model
     * @return the type
     * @throws IllegalArgumentException naming the accepted values
     */
    public static Dtype dtype(String flag, Path checkpoint) {
        String key = flag.trim().toLowerCase(Locale.ROOT);
        if ("auto".equals(key)) {
            return checkpoint == null ? Dtype.F32 : torchDtype(checkpoint);
        }
        Dtype type = ofTorchName(key);
        if (type == null) {
            throw new IllegalArgumentException(
                    "--save_dtype " + flag + ": give auto, float32, bfloat16 or float16");
        }
        return type;
    }

    /**
     * Returns the {@code torch_dtype} of a checkpoint's {@code config.json}, float32 when it has
     * none.
     *
     * @param checkpoint the checkpoint directory
     * @return the type
     */
    public static Dtype torchDtype(Path checkpoint) {
        Path config = checkpoint.resolve("config.json");
        try {
            JsonElement json = JsonParser.parseString(Files.readString(config));
            JsonElement value = json.isJsonObject() ? ((JsonObject) json).get("torch_dtype") : null;
            if (value == null || !value.isJsonPrimitive()) {
                return Dtype.F32;
            }
            Dtype type = ofTorchName(value.getAsString().toLowerCase(Locale.ROOT));
            return type == null ? Dtype.F32 : type;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Returns the {@code torch_dtype} name of an element type a model is saved in. */
    static String torchName(Dtype type) {
        return switch (type) {
            case F32 -> "float32";
            case BF16 -> "bfloat16";
            case F16 -> "float16";
            default -> throw new IllegalArgumentException("a model is saved as F32, BF16 or F16");
        };
    }

    private static Dtype ofTorchName(String name) {
        return switch (name.replace("torch.", "")) {
            case "float32", "float", "fp32" -> Dtype.F32;
            case "bfloat16", "bf16" -> Dtype.BF16;
            case "float16", "half", "fp16" -> Dtype.F16;
            default -> null;
        };
    }

    /**
     * Parses a size as Hugging Face's {@code max_shard_size} does: decimal units ({@code 5GB} is
     * 5e9 bytes), binary ones ({@code 2GiB}), or a plain number of bytes.
     *
     * @param flag the size
     * @return the bytes
     * @throws IllegalArgumentException if it is not a positive size
     */
    public static long bytes(String flag) {
        Matcher m = SIZE.matcher(flag.trim().toUpperCase(Locale.ROOT));
        if (!m.matches()) {
            throw new IllegalArgumentException(
                    "--max_shard_size " + flag + ": give a size such as 5GB, 500MB, 2GiB or bytes");
        }
        double number = Double.parseDouble(m.group(1));
        String unit = m.group(2) == null ? "B" : m.group(2);
        double scale =
                switch (unit) {
                    case "KB" -> 1e3;
                    case "MB" -> 1e6;
                    case "GB" -> 1e9;
                    case "TB" -> 1e12;
                    case "KIB" -> 1024.0;
                    case "MIB" -> 1024.0 * 1024;
                    case "GIB" -> 1024.0 * 1024 * 1024;
                    case "TIB" -> 1024.0 * 1024 * 1024 * 1024;
                    default -> 1;
                };
        long bytes = (long) (number * scale);
        if (bytes <= 0) {
            throw new IllegalArgumentException(
                    "--max_shard_size " + flag + " must be a positive size");
        }
        return bytes;
    }
}
