package ai.djl.fsdp.safetensors;

import ai.djl.ndarray.types.Shape;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonPrimitive;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Parses and checks the JSON header of a safetensors file: every entry is an object with a known
 * {@code dtype}, a {@code shape} of non-negative integers whose byte size fits in a long, and
 * {@code data_offsets} that lie in the data section, match that size and overlap no other tensor's.
 */
final class SafetensorsHeader {

    private static final String ENTRY_FORMAT =
            "{\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [begin, end]}";

    private final Path path;
    private final long dataSize;
    private final Map<String, TensorInfo> tensors = new LinkedHashMap<>();
    private final Map<String, String> metadata = new LinkedHashMap<>();

    private SafetensorsHeader(Path path, long dataSize) {
        this.path = path;
        this.dataSize = dataSize;
    }

    /**
     * Parses a header.
     *
     * @param path the file, for messages
     * @param json the header's text
     * @param dataSize the bytes after the header
     * @return the parsed header
     * @throws SafetensorsException if the header is corrupt, naming the file and the tensor
     */
    static SafetensorsHeader parse(Path path, String json, long dataSize) {
        SafetensorsHeader header = new SafetensorsHeader(path, dataSize);
        JsonElement parsed;
        try {
            parsed = JsonText.parse(json, true);
        } catch (JsonParseException e) {
            SafetensorsException failure =
                    corrupt(path, "its header is not valid JSON: " + JsonText.describe(e));
            failure.addSuppressed(e);
            throw failure;
        }
        if (!parsed.isJsonObject()) {
            throw corrupt(path, "its header is not a JSON object");
        }
        for (Map.Entry<String, JsonElement> entry : parsed.getAsJsonObject().entrySet()) {
            if (SafetensorsFile.METADATA_KEY.equals(entry.getKey())) {
                header.parseMetadata(entry.getValue());
            } else {
                header.tensors.put(entry.getKey(), header.parseEntry(entry));
            }
        }
        header.checkOverlaps();
        return header;
    }

    Map<String, TensorInfo> tensors() {
        return tensors;
    }

    Map<String, String> metadata() {
        return metadata;
    }

    private void parseMetadata(JsonElement value) {
        if (!value.isJsonObject()) {
            throw corrupt(path, SafetensorsFile.METADATA_KEY + " is not an object of strings");
        }
        for (Map.Entry<String, JsonElement> m : value.getAsJsonObject().entrySet()) {
            if (!(m.getValue() instanceof JsonPrimitive p && p.isString())) {
                throw corrupt(
                        path,
                        SafetensorsFile.METADATA_KEY
                                + " value of \""
                                + m.getKey()
                                + "\" is not a string");
            }
            metadata.put(m.getKey(), m.getValue().getAsString());
        }
    }

    private TensorInfo parseEntry(Map.Entry<String, JsonElement> json) {
        String name = json.getKey();
        if (!json.getValue().isJsonObject()) {
            throw malformed(name, "it is not an object");
        }
        JsonObject entry = json.getValue().getAsJsonObject();
        JsonElement dtypeName = entry.get("dtype");
        if (!(dtypeName instanceof JsonPrimitive p && p.isString())) {
            throw malformed(name, "\"dtype\" is missing or not a string");
        }
        Dtype dtype = Dtype.parse(dtypeName.getAsString());
        if (dtype == null) {
            throw malformed(
                    name,
                    "dtype " + dtypeName + " is not one of " + Arrays.toString(Dtype.values()));
        }
        long[] shape = longs(name, entry.get("shape"), "shape", -1);
        long[] offsets = longs(name, entry.get("data_offsets"), "data_offsets", 2);
        long begin = offsets[0];
        long end = offsets[1];
        if (end < begin) {
            throw malformed(name, "its data_offsets [" + begin + ", " + end + "] are reversed");
        }
        if (end > dataSize) {
            throw malformed(
                    name,
                    "its data_offsets ["
                            + begin
                            + ", "
                            + end
                            + "] end beyond the data section of "
                            + dataSize
                            + " bytes (truncated file?)");
        }
        long bytes = dtype.bytes();
        try {
            for (long dim : shape) {
                bytes = Math.multiplyExact(bytes, dim);
            }
        } catch (ArithmeticException e) {
            throw malformed(
                    name,
                    "shape " + Arrays.toString(shape) + " of " + dtype + " overflows 2^63 bytes");
        }
        if (end - begin != bytes) {
            throw malformed(
                    name,
                    "it spans "
                            + (end - begin)
                            + " bytes but shape "
                            + Arrays.toString(shape)
                            + " of "
                            + dtype
                            + " needs "
                            + bytes);
        }
        return new TensorInfo(name, dtype, new Shape(shape), begin, end);
    }

    /** Reads an array of non-negative integers; {@code size} -1 accepts any length. */
    private long[] longs(String name, JsonElement value, String key, int size) {
        if (value == null || !value.isJsonArray()) {
            throw malformed(name, "\"" + key + "\" is missing or not an array");
        }
        JsonArray array = value.getAsJsonArray();
        if (size >= 0 && array.size() != size) {
            throw malformed(name, "\"" + key + "\" has " + array.size() + " values, not " + size);
        }
        long[] values = new long[array.size()];
        for (int i = 0; i < values.length; i++) {
            JsonElement element = array.get(i);
            try {
                if (!(element instanceof JsonPrimitive p && p.isNumber())) {
                    throw new NumberFormatException();
                }
                values[i] = Long.parseLong(element.getAsString());
            } catch (NumberFormatException e) {
                values[i] = -1;
            }
            if (values[i] < 0) {
                throw malformed(
                        name, "\"" + key + "\" holds " + element + ", not an integer in [0, 2^63)");
            }
        }
        return values;
    }

    /** Two tensors' data must not share a byte; empty tensors share none. */
    private void checkOverlaps() {
        List<TensorInfo> sorted = new ArrayList<>(tensors.values());
        sorted.removeIf(t -> t.begin() == t.end());
        sorted.sort(Comparator.comparingLong(TensorInfo::begin));
        for (int i = 1; i < sorted.size(); i++) {
            TensorInfo before = sorted.get(i - 1);
            TensorInfo after = sorted.get(i);
            if (after.begin() < before.end()) {
                throw corrupt(
                        path,
                        "tensors \""
                                + before.name()
                                + "\" ["
                                + before.begin()
                                + ", "
                                + before.end()
                                + ") and \""
                                + after.name()
                                + "\" ["
                                + after.begin()
                                + ", "
                                + after.end()
                                + ") overlap in the"
                                + " data section");
            }
        }
    }

    private SafetensorsException malformed(String name, String problem) {
        return corrupt(
                path, "tensor \"" + name + "\": " + problem + " (expected " + ENTRY_FORMAT + ")");
    }

    static SafetensorsException corrupt(Path path, String problem) {
        return new SafetensorsException(path + " is not a valid safetensors file: " + problem);
    }
}
