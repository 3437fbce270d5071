package ai.djl.fsdp.zoo.finetune.data;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import com.google.gson.ToNumberPolicy;
import com.google.gson.reflect.TypeToken;
import java.io.BufferedReader;
import java.io.IOException;
import java.lang.reflect.Type;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;

/**
 * Reads {@code --dataset_name}: the built-in {@link ArithmeticChat} (or for a seq2seq model {@link
 * SentimentLabels}), a file, or a directory with one file per split ({@code train.jsonl}, {@code
 * test.jsonl}, ...). A {@code .jsonl} or {@code .json} file holds one JSON object per line: a
 * conversation under {@code messages} ({@code role}, {@code content}, as TRL's conversational data
 * also {@code tool_calls} and the like, with the tools offered under {@code tools}) or a text under
 * {@code --dataset_text_field} (for an encoder-decoder model, a source and a target under {@code
 * --source_field} and {@code --target_field}); any other file is plain UTF-8 text, one document. A
 * single file's eval split is a held-out fraction of it.
 */
public final class TextDatasets {

    /**
     * The JSON fields an example is read from.
     *
     * @param text the field of a text, or of a pair's source
     * @param target the field of a pair's target, or null where examples are texts
     */
    public record Fields(String text, String target) {

        /**
         * Returns the fields of text documents.
         *
         * @param text the text's field
         * @return the fields
         */
        public static Fields text(String text) {
            return new Fields(text, null);
        }
    }

    /** Reads a message or a tool as Java maps, lists, strings, numbers and booleans. */
    private static final Gson JSON =
            new GsonBuilder()
                    .serializeNulls()
                    .setObjectToNumberStrategy(ToNumberPolicy.LONG_OR_DOUBLE)
                    .create();

    private static final Type MAP = new TypeToken<Map<String, Object>>() {}.getType();

    private TextDatasets() {}

    /**
     * Loads the train split and, if {@code evalSplit} is not null, the eval split.
     *
     * @param name the built-in name, a file or a directory
     * @param trainSplit the train split's name ({@code train})
     * @param evalSplit the eval split's name ({@code test}), or null for none
     * @param fields the JSON fields of an example
     * @param heldOutFraction the fraction of a single file held out for eval, in (0, 1)
     * @param seed the seed of the held-out draw and of the built-in data
     * @return the splits, train first
     * @throws IOException if a file cannot be read
     */
    public static Map<String, List<Document>> load(
            String name,
            String trainSplit,
            String evalSplit,
            Fields fields,
            double heldOutFraction,
            long seed)
            throws IOException {
        Map<String, List<Document>> splits = new LinkedHashMap<>();
        Path path = Path.of(name);
        if (SentimentLabels.NAME.equals(name)) {
            Map<String, List<Document>> generated = SentimentLabels.generate(150, seed);
            splits.put(trainSplit, generated.get("train"));
            if (evalSplit != null) {
                splits.put(evalSplit, generated.get("test"));
            }
        } else if (ArithmeticChat.NAME.equals(name)) {
            Map<String, List<Document>> generated = ArithmeticChat.generate(4000, 200, seed);
            splits.put(trainSplit, generated.get("train"));
            if (evalSplit != null) {
                splits.put(evalSplit, generated.get("test"));
            }
        } else if (Files.isDirectory(path)) {
            splits.put(trainSplit, read(splitFile(path, trainSplit), fields));
            if (evalSplit != null) {
                splits.put(evalSplit, read(splitFile(path, evalSplit), fields));
            }
        } else if (Files.isRegularFile(path)) {
            List<Document> all = read(path, fields);
            if (evalSplit == null) {
                splits.put(trainSplit, all);
            } else {
                holdOut(all, heldOutFraction, seed, splits, trainSplit, evalSplit);
            }
        } else {
            throw new IllegalArgumentException(
                    "--dataset_name "
                            + name
                            + " is neither a file, a directory of split files, nor a built-in ("
                            + ArithmeticChat.NAME
                            + ", or for a seq2seq model "
                            + SentimentLabels.NAME
                            + ")");
        }
        return splits;
    }

    private static void holdOut(
            List<Document> all,
            double fraction,
            long seed,
            Map<String, List<Document>> splits,
            String trainSplit,
            String evalSplit) {
        if (all.size() == 1 && !all.get(0).isChat() && all.get(0).target() == null) {
            // One plain text: the eval split is its last lines.
            String text = all.get(0).text();
            int cut = text.lastIndexOf('\n', (int) (text.length() * (1 - fraction)));
            cut = cut < 0 ? (int) (text.length() * (1 - fraction)) : cut + 1;
            splits.put(trainSplit, List.of(Document.ofText(text.substring(0, cut))));
            splits.put(evalSplit, List.of(Document.ofText(text.substring(cut))));
            return;
        }
        List<Document> shuffled = new ArrayList<>(all);
        Collections.shuffle(shuffled, new Random(seed));
        int held = Math.max(1, (int) Math.round(all.size() * fraction));
        if (held >= all.size()) {
            throw new IllegalArgumentException(
                    "the dataset has "
                            + all.size()
                            + " examples: too few to hold out an eval split; give a --splits"
                            + " directory or more data");
        }
        splits.put(trainSplit, shuffled.subList(held, shuffled.size()));
        splits.put(evalSplit, shuffled.subList(0, held));
    }

    /** Returns the directory's file for a split: {@code <split>.<ext>} or {@code <split>-*}. */
    private static Path splitFile(Path directory, String split) throws IOException {
        List<Path> matches;
        try (Stream<Path> files = Files.list(directory)) {
            matches =
                    files.filter(Files::isRegularFile)
                            .filter(
                                    file -> {
                                        String base = file.getFileName().toString();
                                        return base.startsWith(split + ".")
                                                || base.startsWith(split + "-");
                                    })
                            .sorted()
                            .toList();
        }
        if (matches.size() != 1) {
            throw new IllegalArgumentException(
                    "--splits: "
                            + directory
                            + (matches.isEmpty() ? " has no file" : " has several files")
                            + " for split '"
                            + split
                            + "' "
                            + matches
                            + ": give it exactly one, such as "
                            + split
                            + ".jsonl");
        }
        return matches.get(0);
    }

    /**
     * Reads one file: JSON lines ({@code .jsonl}, {@code .json}) or plain text.
     *
     * @param file the file
     * @param fields the JSON fields of an example
     * @return its documents
     * @throws IOException if it cannot be read
     */
    public static List<Document> read(Path file, Fields fields) throws IOException {
        try {
            return readUtf8(file, fields);
        } catch (CharacterCodingException e) {
            throw new IllegalArgumentException(
                    "--dataset_name "
                            + file
                            + " is not UTF-8 text (it holds a byte sequence UTF-8 does not allow;"
                            + " a binary file?): pass a plain-text file, or convert it, e.g. with"
                            + " iconv -f LATIN1 -t UTF-8");
        }
    }

    private static List<Document> readUtf8(Path file, Fields fields) throws IOException {
        String base = file.getFileName().toString();
        if (!base.endsWith(".jsonl") && !base.endsWith(".json")) {
            String text = Files.readString(file, StandardCharsets.UTF_8);
            if (text.isBlank()) {
                throw empty(file, "text");
            }
            return List.of(Document.ofText(text));
        }
        List<Document> documents = new ArrayList<>();
        try (BufferedReader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            int number = 0;
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                number++;
                if (!line.isBlank()) {
                    documents.add(parse(line, file, number, fields));
                }
            }
        }
        if (documents.isEmpty()) {
            throw empty(file, "JSON lines");
        }
        return documents;
    }

    private static IllegalArgumentException empty(Path file, String what) {
        return new IllegalArgumentException(
                "--dataset_name: "
                        + file
                        + " holds no "
                        + what
                        + " (an empty file?): give at least one example, a line of text or a JSON"
                        + " line with the text field or \"messages\"");
    }

    private static Document parse(String line, Path file, int number, Fields fields) {
        String where = file + " line " + number;
        JsonObject json;
        try {
            json = JsonParser.parseString(line).getAsJsonObject();
        } catch (JsonParseException | IllegalStateException e) {
            throw new IllegalArgumentException(where + " is not a JSON object: " + e.getMessage());
        }
        if (fields.target() != null) {
            return Document.ofPair(
                    field(json, fields.text(), "--source_field", where),
                    field(json, fields.target(), "--target_field", where));
        }
        if (json.has("messages")) {
            List<Map<String, Object>> messages = new ArrayList<>();
            for (JsonObject message :
                    objects(json, "messages", "a list of messages, each an object", where)) {
                boolean calls =
                        message.has("tool_calls") && !message.get("tool_calls").isJsonNull();
                if (!message.has("role") || !message.has("content") && !calls) {
                    throw new IllegalArgumentException(
                            where
                                    + ": every message needs 'role' and 'content' (or"
                                    + " 'tool_calls'), got "
                                    + message);
                }
                messages.add(JSON.fromJson(message, MAP));
            }
            JsonElement tools = json.get("tools");
            if (tools == null || tools.isJsonNull()) {
                return Document.ofMessages(messages);
            }
            List<Map<String, Object>> schemas = new ArrayList<>();
            for (JsonObject tool : objects(json, "tools", "a list of JSON schemas", where)) {
                schemas.add(JSON.fromJson(tool, MAP));
            }
            return Document.ofMessages(messages, schemas);
        }
        JsonElement text = json.get(fields.text());
        if (text == null || !text.isJsonPrimitive()) {
            throw new IllegalArgumentException(
                    where
                            + " has neither 'messages' nor the text field '"
                            + fields.text()
                            + "' (--dataset_text_field); its keys: "
                            + json.keySet());
        }
        return Document.ofText(text.getAsString());
    }

    /**
     * Returns the objects of a list-valued key of a JSON line, or fails naming the file and line,
     * the key and the shape expected.
     */
    private static List<JsonObject> objects(
            JsonObject json, String key, String shape, String where) {
        JsonElement list = json.get(key);
        List<JsonObject> objects = new ArrayList<>();
        if (list.isJsonArray()) {
            for (JsonElement element : list.getAsJsonArray()) {
                if (!element.isJsonObject()) {
                    throw new IllegalArgumentException(
                            where + ": '" + key + "' is " + shape + ", but it holds " + element);
                }
                objects.add(element.getAsJsonObject());
            }
            return objects;
        }
        throw new IllegalArgumentException(where + ": '" + key + "' is " + shape + ", got " + list);
    }

    /** Returns a pair's text field, or fails naming it and its flag. */
    private static String field(JsonObject json, String name, String flag, String where) {
        JsonElement value = json.get(name);
        if (value == null || !value.isJsonPrimitive()) {
            throw new IllegalArgumentException(
                    where
                            + " has no field '"
                            + name
                            + "' ("
                            + flag
                            + "); its keys: "
                            + json.keySet()
                            + ": name the field with "
                            + flag);
        }
        return value.getAsString();
    }
}
