package ai.djl.fsdp.zoo.finetune.data;

import java.util.List;
import java.util.Map;

/**
 * One training example: a text, a conversation of messages ({@code role}, {@code content}, and as
 * in TRL's conversational data {@code tool_calls}, {@code tool_call_id}, ...) with the tools
 * offered to the model, or for an encoder-decoder model a source text and its target.
 *
 * @param text the text, or the source of a pair; null for a conversation
 * @param messages the conversation, or null for a text; values strings, lists and maps as in JSON
 * @param tools the tools' JSON schemas, or null for none
 * @param target the target of a source-target pair, or null
 */
public record Document(
        String text,
        List<? extends Map<String, ?>> messages,
        List<? extends Map<String, ?>> tools,
        String target) {

    /**
     * Returns a text document.
     *
     * @param text the text
     * @return the document
     */
    public static Document ofText(String text) {
        return new Document(text, null, null, null);
    }

    /**
     * Returns a conversation without tools.
     *
     * @param messages the messages, each with {@code role} and {@code content}
     * @return the document
     */
    public static Document ofMessages(List<? extends Map<String, ?>> messages) {
        return ofMessages(messages, null);
    }

    /**
     * Returns a conversation with the tools offered to the model.
     *
     * @param messages the messages, each with {@code role} and {@code content} or {@code
     *     tool_calls}
     * @param tools the tools' JSON schemas, or null for none
     * @return the document
     */
    public static Document ofMessages(
            List<? extends Map<String, ?>> messages, List<? extends Map<String, ?>> tools) {
        return new Document(
                null, List.copyOf(messages), tools == null ? null : List.copyOf(tools), null);
    }

    /**
     * Returns a source text and its target, an encoder-decoder model's example.
     *
     * @param source the source text
     * @param target the target text
     * @return the document
     */
    public static Document ofPair(String source, String target) {
        return new Document(source, null, null, target);
    }

    /** Returns true for a conversation. */
    public boolean isChat() {
        return messages != null;
    }
}
