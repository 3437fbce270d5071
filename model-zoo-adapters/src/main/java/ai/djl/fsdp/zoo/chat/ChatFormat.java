package ai.djl.fsdp.zoo.chat;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * How conversations become text: ChatML ({@link ChatTemplate#CHATML}) or a tokenizer's own Jinja
 * chat template ({@link JinjaChatTemplate}).
 */
public interface ChatFormat {

    /**
     * Renders a conversation as spans, marking the assistant's.
     *
     * @param messages the messages, each with {@code role} and {@code content} (and, for a format
     *     that renders them, {@code tool_calls}, {@code tool_call_id}, ... as in JSON)
     * @param tools the tools' JSON schemas offered to the model, or null for none
     * @param findAssistant whether the assistant's spans must be told apart (completion-only loss);
     *     if not, a format may return the whole text as one span
     * @return the spans, in order
     * @throws IllegalArgumentException if the template fails or cannot tell the assistant's spans,
     *     or the format has no place for the conversation's tools or tool calls
     */
    List<ChatTemplate.Span> render(
            List<? extends Map<String, ?>> messages,
            List<? extends Map<String, ?>> tools,
            boolean findAssistant);

    /**
     * Returns the prompt that asks the model for the next reply.
     *
     * @param messages the conversation so far
     * @return the prompt text
     */
    String generationPrompt(List<? extends Map<String, ?>> messages);

    /** Returns the token text that ends a reply. */
    String endOfTurn();

    /** Returns whether the format's markers are added to the tokenizer as special tokens. */
    boolean addsMarkers();

    /**
     * Writes the format's {@code tokenizer_config.json} into a model directory, for {@code bin/fsdp
     * generate}.
     *
     * @param directory the model directory
     * @throws IOException if writing fails
     */
    void writeConfig(Path directory) throws IOException;
}
