package ai.djl.fsdp.zoo.finetune.data;

import java.util.List;
import java.util.Map;

/**
 * One training example: a text, or a conversation of messages ({@code role}, {@code content}).
 *
 * @param text the text, or null for a conversation
 * @param messages the conversation, or null for a text
 */
public record Document(String text, List<Map<String, String>> messages) {

    /**
     * Returns a text document.
     *
     * @param text the text
     * @return the document
     */
    public static Document ofText(String text) {
        return new Document(text, null);
    }

    /**
     * Returns a conversation.
     *
     * @param messages the messages, each with {@code role} and {@code content}
     * @return the document
     */
    public static Document ofMessages(List<Map<String, String>> messages) {
        return new Document(null, List.copyOf(messages));
    }

    /** Returns true for a conversation. */
    public boolean isChat() {
        return messages != null;
    }
}
