package ai.djl.fsdp.zoo.finetune.data;

import ai.djl.fsdp.zoo.chat.TokenizerJson;
import com.google.gson.JsonArray;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The project's own tokenizer: GPT-2's byte-level scheme with no merges, so every UTF-8 byte is one
 * token (ids 0-255, in GPT-2's byte order) and {@code <|endoftext|>} is id 256. It is written as a
 * Hugging Face {@code tokenizer.json} by code, so a plain clone needs no downloaded tokenizer; with
 * 257 tokens the output layer is tiny and digits are single tokens, which suits the built-in
 * arithmetic chat data.
 */
public final class ByteLevelTokenizer {

    /** The name {@code --tokenizer_name} takes for this tokenizer. */
    public static final String NAME = "byte-level";

    /** The end-of-text token. */
    public static final String END_OF_TEXT = "<|endoftext|>";

    /** The number of tokens (256 bytes and the end-of-text token). */
    public static final int VOCAB_SIZE = 257;

    private ByteLevelTokenizer() {}

    /**
     * Writes the tokenizer to {@code file} (through a temporary name).
     *
     * @param file the {@code tokenizer.json} to write
     * @throws IOException if writing fails
     */
    public static void write(Path file) throws IOException {
        JsonObject vocab = new JsonObject();
        List<Integer> order = byteOrder();
        for (int id = 0; id < order.size(); id++) {
            vocab.addProperty(symbol(order.get(id)), id);
        }
        JsonObject model = new JsonObject();
        model.addProperty("type", "BPE");
        model.add("dropout", JsonNull.INSTANCE);
        model.add("unk_token", JsonNull.INSTANCE);
        model.addProperty("continuing_subword_prefix", "");
        model.addProperty("end_of_word_suffix", "");
        model.addProperty("fuse_unk", false);
        model.addProperty("byte_fallback", false);
        model.add("vocab", vocab);
        model.add("merges", new JsonArray());

        JsonObject root = new JsonObject();
        root.addProperty("version", "1.0");
        root.add("truncation", JsonNull.INSTANCE);
        root.add("padding", JsonNull.INSTANCE);
        JsonArray added = new JsonArray();
        added.add(TokenizerJson.addedToken(VOCAB_SIZE - 1, END_OF_TEXT));
        root.add("added_tokens", added);
        root.add("normalizer", JsonNull.INSTANCE);
        root.add("pre_tokenizer", byteLevel(false));
        root.add("post_processor", byteLevel(true));
        root.add("decoder", byteLevel(true));
        root.add("model", model);
        TokenizerJson.write(root, file);
    }

    private static JsonObject byteLevel(boolean prefixSpace) {
        JsonObject json = new JsonObject();
        json.addProperty("type", "ByteLevel");
        json.addProperty("add_prefix_space", prefixSpace);
        json.addProperty("trim_offsets", true);
        json.addProperty("use_regex", true);
        return json;
    }

    /** GPT-2's order of the 256 bytes: the printable ones first, then the rest. */
    private static List<Integer> byteOrder() {
        List<Integer> order = new ArrayList<>();
        for (int b = 0; b < 256; b++) {
            if (printable(b)) {
                order.add(b);
            }
        }
        for (int b = 0; b < 256; b++) {
            if (!printable(b)) {
                order.add(b);
            }
        }
        return order;
    }

    private static boolean printable(int b) {
        return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    }

    /** The character GPT-2's byte-level scheme shows a byte as. */
    private static String symbol(int b) {
        if (printable(b)) {
            return String.valueOf((char) b);
        }
        int shift = 0;
        for (int other = 0; other < b; other++) {
            if (!printable(other)) {
                shift++;
            }
        }
        return String.valueOf((char) (256 + shift));
    }
}
