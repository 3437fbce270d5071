package ai.djl.fsdp.zoo.chat;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The ChatML chat template ({@code --chat_template_format chatml}), as TRL's {@code
 * setup_chat_format} installs it: each message is {@code <|im_start|>role\ncontent<|im_end|>\n},
 * the two markers are added to the tokenizer as special tokens (and the model's embedding grows to
 * the new vocabulary). Rendering keeps which characters are the assistant's, so the loss can be
 * restricted to them (TRL's completion-only loss).
 */
public final class ChatTemplate {

    /** Opens a message. */
    public static final String START = "<|im_start|>";

    /** Closes a message; also the end of a generated reply. */
    public static final String END = "<|im_end|>";

    /** The file beside {@code tokenizer.json} that records the template, as Hugging Face's. */
    public static final String CONFIG_FILE = "tokenizer_config.json";

    /** The template in Hugging Face's Jinja form, written to {@code tokenizer_config.json}. */
    public static final String JINJA =
            "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' +"
                    + " message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if"
                    + " add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

    /** ChatML as a {@link ChatFormat}. */
    public static final ChatFormat CHATML =
            new ChatFormat() {
                @Override
                public List<Span> render(
                        List<? extends Map<String, ?>> messages,
                        List<? extends Map<String, ?>> tools,
                        boolean findAssistant) {
                    if (tools != null && !tools.isEmpty()) {
                        throw new IllegalArgumentException(TOOLS_UNSUPPORTED);
                    }
                    return ChatTemplate.render(messages);
                }

                @Override
                public String generationPrompt(List<? extends Map<String, ?>> messages) {
                    return ChatTemplate.generationPrompt(messages);
                }

                @Override
                public String endOfTurn() {
                    return END;
                }

                @Override
                public boolean addsMarkers() {
                    return true;
                }

                @Override
                public void writeConfig(Path directory) throws IOException {
                    ChatTemplate.writeConfig(directory);
                }
            };

    private static final String TOOLS_UNSUPPORTED =
            "ChatML renders a message's text content only: a conversation with tools, tool calls"
                    + " or a content that is not text needs the tokenizer's own chat_template"
                    + " (leave out --chat_template_format chatml)";

    private ChatTemplate() {}

    /** A rendered span of text and whether it is the assistant's (trained on). */
    public record Span(String text, boolean assistant) {}

    /**
     * Renders a conversation.
     *
     * @param messages the messages, each with {@code role} and {@code content}
     * @return the spans, in order
     * @throws IllegalArgumentException for a message with tool calls or without text content
     */
    public static List<Span> render(List<? extends Map<String, ?>> messages) {
        List<Span> spans = new ArrayList<>();
        for (Map<String, ?> message : messages) {
            if (!(message.get("content") instanceof String content)
                    || message.get("tool_calls") != null) {
                throw new IllegalArgumentException(TOOLS_UNSUPPORTED);
            }
            String role = String.valueOf(message.get("role"));
            spans.add(new Span(START + role + "\n", false));
            boolean assistant = "assistant".equals(role);
            spans.add(new Span(content + END + "\n", assistant));
        }
        return spans;
    }

    /**
     * Returns the prompt that asks the model for the next reply: the conversation so far and the
     * opening of an assistant message.
     *
     * @param messages the conversation so far
     * @return the prompt text
     */
    public static String generationPrompt(List<? extends Map<String, ?>> messages) {
        StringBuilder prompt = new StringBuilder();
        for (Span span : render(messages)) {
            prompt.append(span.text());
        }
        return prompt.append(START).append("assistant\n").toString();
    }

    /**
     * Writes a copy of a {@code tokenizer.json}, with the template's markers added as special
     * tokens if asked (those already present keep their ids).
     *
     * @param source the tokenizer
     * @param target where the copy goes
     * @param addMarkers whether to add the template's markers
     * @return the vocabulary size of the copy
     * @throws IOException if a file cannot be read or written
     */
    public static int writeTokenizer(Path source, Path target, boolean addMarkers)
            throws IOException {
        JsonObject root =
                JsonParser.parseString(Files.readString(source, StandardCharsets.UTF_8))
                        .getAsJsonObject();
        int size = TokenizerJson.size(root, source);
        List<String> present = new ArrayList<>(TokenizerJson.vocabulary(root, source).values());
        if (!root.has("added_tokens")) {
            root.add("added_tokens", new JsonArray());
        }
        for (JsonElement token : root.getAsJsonArray("added_tokens")) {
            present.add(token.getAsJsonObject().get("content").getAsString());
        }
        for (String marker : List.of(START, END)) {
            if (addMarkers && !present.contains(marker)) {
                root.getAsJsonArray("added_tokens").add(TokenizerJson.addedToken(size++, marker));
            }
        }
        TokenizerJson.write(root, target);
        return size;
    }

    /**
     * Writes {@code tokenizer_config.json} with the template and its end-of-turn token, which
     * {@code bin/fsdp generate} reads to prompt a chat model.
     *
     * @param directory the model directory
     * @throws IOException if writing fails
     */
    public static void writeConfig(Path directory) throws IOException {
        JsonObject config = new JsonObject();
        config.addProperty("chat_template", JINJA);
        config.addProperty("eos_token", END);
        TokenizerJson.write(config, directory.resolve(CONFIG_FILE));
    }
}
