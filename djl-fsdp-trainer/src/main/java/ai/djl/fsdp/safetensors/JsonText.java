package ai.djl.fsdp.safetensors;

import com.google.gson.JsonElement;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import com.google.gson.JsonPrimitive;
import com.google.gson.Strictness;
import com.google.gson.stream.JsonReader;
import com.google.gson.stream.JsonToken;
import java.io.IOException;
import java.io.StringReader;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses the JSON of checkpoint files (safetensors headers, their index, {@code config.json}) and
 * says what is wrong with malformed JSON in the user's terms: where it breaks and how, without the
 * parser's advice to its own programmers.
 */
public final class JsonText {

    private static final Pattern POSITION =
            Pattern.compile("^(.*?) at line (\\d+) column (\\d+)", Pattern.DOTALL);

    private JsonText() {}

    /**
     * Parses one JSON value that must make up the whole text.
     *
     * @param text the JSON text
     * @param strict whether only standard JSON is accepted ({@code false} also accepts what
     *     Python's {@code json} writes beyond the standard, such as {@code NaN})
     * @return the value
     * @throws JsonParseException if the text is not one JSON value; see {@link #describe}
     */
    public static JsonElement parse(String text, boolean strict) {
        JsonReader reader = new JsonReader(new StringReader(text));
        reader.setStrictness(strict ? Strictness.STRICT : Strictness.LENIENT);
        JsonElement value = JsonParser.parseReader(reader);
        try {
            if (reader.peek() != JsonToken.END_DOCUMENT) {
                // JsonReader's toString() is "JsonReader at line L column C path P".
                throw new JsonParseException(
                        "more text after the JSON value"
                                + reader.toString().substring("JsonReader".length()));
            }
        } catch (IOException e) {
            throw new JsonParseException(e);
        }
        return value;
    }

    /**
     * Returns the strings of a JSON array that holds only strings, such as a list of module names.
     *
     * @param value the value, or null
     * @return the strings in order, or null if {@code value} is not such an array
     */
    public static List<String> strings(JsonElement value) {
        if (value == null || !value.isJsonArray()) {
            return null;
        }
        List<String> strings = new ArrayList<>();
        for (JsonElement element : value.getAsJsonArray()) {
            if (!(element instanceof JsonPrimitive p && p.isString())) {
                return null;
            }
            strings.add(p.getAsString());
        }
        return strings;
    }

    /**
     * Describes a parse failure: what broke and where, as {@code "the text ends early at line 3
     * column 7"}.
     *
     * @param e the failure
     * @return the description
     */
    public static String describe(JsonParseException e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String message = root.getMessage() != null ? root.getMessage() : root.toString();
        Matcher matcher = POSITION.matcher(message);
        if (!matcher.find()) {
            return "malformed JSON";
        }
        String what = matcher.group(1);
        if (what.startsWith("End of input")) {
            what = "the text ends early (truncated?)";
        } else if (what.startsWith("Use JsonReader.setStrictness")) {
            what = "malformed JSON";
        } else if (what.length() > 80) {
            what = what.substring(0, 80) + "...";
        }
        return what + " at line " + matcher.group(2) + " column " + matcher.group(3);
    }
}
