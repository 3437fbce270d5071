package ai.djl.fsdp.zoo.finetune.data;

import java.util.List;
import java.util.Map;

/**
 * One training example: a text, or a conversation of messages ({@code role}, {@code content}, and
 * as in TRL's conversational data {@code tool_calls}, {@code tool_call_id}, ...) with the tools
 * offered to the model.
 *
 * @param text the text, or null for a conversation
 * @param messages the conversation, or null for a text; values strings, lists and maps as in JSON
 * @param tools the tools' JSON schemas, or null for none
 */
public record Document(
        String text,
        List<? extends Map<String, ?>> messages,
        List<? extends Map<String, ?>> tools) {

    /**
     * Returns a text document.
     *
     * @param text the text
     * @return the document
     */
    public static Document ofText(String text) {
        return new Document(text, null, null);
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
        return new Document(null, List.copyOf(messages), tools == null ? null : List.copyOf(tools));
    }

    /** Returns true for a conversation. */
    public boolean isChat() {
        return messages != null;
    }
}
