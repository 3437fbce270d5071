package ai.djl.fsdp.zoo.chat;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Finds the assistant's replies in the rendering of a whole conversation, for the completion-only
 * loss: each reply is what the model writes after the generation prompt, up to and with its
 * end-of-turn text (content, tool calls, closing marker), as it stands in the whole rendering.
 *
 * <p>For the reply of message {@code i}: the first {@code i} messages rendered with the generation
 * prompt give the prompt, and the first {@code i + 1} rendered without it give the reply after it.
 * Where the whole rendering holds that reply right where it parts from the prompt, that is the span
 * (every template that renders a turn the same whatever follows). Templates that render a reply
 * otherwise once later messages follow are anchored on the reply's content: appending a private-use
 * mark to it shows where its content ends, in the whole rendering and in the one that ends with it;
 * the text after the content there (tool calls, closing marker) must follow it in the whole too,
 * and the reply's start is the later of where the whole parts from the prompt and how far the
 * reply's own text runs back from its end. So Qwen3's history, which drops the {@code <think>}
 * block the last reply has, and Mistral-Nemo, which moves the tools and the system message before
 * the last question, are found; a template that drops a reply's text altogether is named in an
 * error.
 */
final class AssistantSpans {

    /** A private-use character no template prints, appended to a message's content. */
    private static final String MARK = "\uE000";

    /**
     * What special tokens look like in chat templates: {@code <|x|>}, {@code <｜x｜>}, {@code [X]},
     * {@code <x>}.
     */
    private static final Pattern MARKER =
            Pattern.compile(
                    "<\\|[^<>|\\s]{1,40}\\|>|<｜[^<>｜]{1,40}｜>|\\[/?[A-Z_]{2,30}]|</?[a-z_]{1,30}>");

    /** The longest special token {@link #MARKER} finds. */
    private static final int MARKER_MOST = 44;

    /** Renders messages, with the generation prompt or without. */
    interface Renderer {

        /**
         * Renders messages.
         *
         * @param messages the messages
         * @param addGenerationPrompt whether to open the assistant's next reply
         * @return the text
         */
        String render(List<? extends Map<String, ?>> messages, boolean addGenerationPrompt);
    }

    private final Renderer renderer;
    private final String named;

    /**
     * Finds replies with a renderer.
     *
     * @param renderer the template
     * @param named the template as errors name it
     */
    AssistantSpans(Renderer renderer, String named) {
        this.renderer = renderer;
        this.named = named;
    }

    /**
     * Renders a conversation as spans, the assistant's replies marked.
     *
     * @param messages the messages
     * @return the spans, whose texts make the whole rendering
     * @throws IllegalArgumentException if a reply cannot be found
     */
    List<ChatTemplate.Span> find(List<? extends Map<String, ?>> messages) {
        String whole = renderer.render(messages, false);
        List<ChatTemplate.Span> spans = new ArrayList<>();
        int done = 0;
        for (int i = 0; i < messages.size(); i++) {
            if (!"assistant".equals(messages.get(i).get("role"))) {
                continue;
            }
            int[] reply = reply(messages, i, whole);
            if (reply[0] < done) {
                throw notFound(i);
            }
            if (reply[0] > done) {
                spans.add(new ChatTemplate.Span(whole.substring(done, reply[0]), false));
            }
            spans.add(new ChatTemplate.Span(whole.substring(reply[0], reply[1]), true));
            done = reply[1];
        }
        if (done < whole.length()) {
            spans.add(new ChatTemplate.Span(whole.substring(done), false));
        }
        return spans;
    }

    /** Returns where message {@code i}'s reply starts and ends in the whole rendering. */
    private int[] reply(List<? extends Map<String, ?>> messages, int i, String whole) {
        List<? extends Map<String, ?>> before = messages.subList(0, i);
        List<? extends Map<String, ?>> upTo = messages.subList(0, i + 1);
        String prompt = renderer.render(before, true);
        String last = renderer.render(upTo, false);
        int start = commonPrefix(whole, prompt);
        if (last.startsWith(prompt) && whole.startsWith(last.substring(prompt.length()), start)) {
            return new int[] {start, start + last.length() - prompt.length()}; // prefix-stable
        }
        // The prompt's end after the previous message's content: where the reply starts.
        String opening = null;
        if (i > 0) {
            int previous = contentEnd(before, i - 1, prompt, true);
            opening = previous < 0 ? null : prompt.substring(previous);
        }
        int lastStart = replyStart(upTo, i, last, prompt, opening);
        start = replyStart(messages, i, whole, prompt, opening);
        int contentEnd = contentEnd(messages, i, whole, false);
        int lastContentEnd = contentEnd(upTo, i, last, false);
        if (contentEnd < start || lastContentEnd < lastStart) {
            throw notFound(i);
        }
        // The text after the content (tool calls, closing marker), as far as the whole has it: a
        // template may close the conversation with more (Phi-3.5's end of text).
        String tail = last.substring(lastContentEnd);
        int end = snapBack(whole, contentEnd + commonPrefix(tail, whole.substring(contentEnd)));
        if (end == contentEnd && !tail.isEmpty()) {
            throw notFound(i);
        }
        return new int[] {start, end};
    }

    /**
     * Returns where message {@code i}'s reply starts in a rendering: after the previous message's
     * content and as much of the prompt's opening after it as the rendering has, or without a
     * previous content where the rendering parts from the prompt.
     */
    private int replyStart(
            List<? extends Map<String, ?>> messages,
            int i,
            String rendered,
            String prompt,
            String opening) {
        if (opening == null) {
            return snapBack(rendered, commonPrefix(rendered, prompt));
        }
        int previous = contentEnd(messages, i - 1, rendered, false);
        if (previous < 0) {
            throw notFound(i);
        }
        return snapBack(rendered, previous + commonPrefix(opening, rendered.substring(previous)));
    }

    /**
     * Returns where message {@code i}'s content ends in a rendering of the messages: where a mark
     * appended to it shows; -1 if the rendering does not change (the content is not printed).
     */
    private int contentEnd(
            List<? extends Map<String, ?>> messages,
            int i,
            String rendered,
            boolean addGenerationPrompt) {
        List<Map<String, ?>> marked = new ArrayList<>(messages);
        Map<String, Object> message = new LinkedHashMap<>(messages.get(i));
        Object content = message.get("content");
        message.put("content", (content instanceof String text ? text : "") + MARK);
        marked.set(i, message);
        String changed = renderer.render(marked, addGenerationPrompt);
        if (changed.equals(rendered)) {
            return -1;
        }
        int prefix = commonPrefix(rendered, changed);
        int most = Math.min(rendered.length(), changed.length()) - prefix;
        return rendered.length() - Math.min(commonSuffix(rendered, changed), most);
    }

    /**
     * Moves a boundary back to the start of the special token it falls inside ({@code <|im_end|>},
     * {@code </s>}, {@code [INST]}): two texts that part at {@code <|user|>} and {@code
     * <|endoftext|>} share {@code <|}, which is no boundary.
     */
    private static int snapBack(String text, int at) {
        Matcher marker = MARKER.matcher(text);
        marker.region(Math.max(0, at - MARKER_MOST), Math.min(text.length(), at + MARKER_MOST));
        while (marker.find()) {
            if (marker.start() < at && at < marker.end()) {
                return marker.start();
            }
        }
        return at;
    }

    private IllegalArgumentException notFound(int i) {
        return new IllegalArgumentException(
                named
                        + " renders the assistant's message "
                        + (i + 1)
                        + " otherwise once later messages follow, and its reply is not found in"
                        + " the whole conversation (the template is not prefix-stable and drops"
                        + " the reply's text), so the assistant's tokens cannot be found for"
                        + " --completion_only_loss; train on every token (--completion_only_loss"
                        + " False) or render with --chat_template_format chatml");
    }

    private static int commonPrefix(String a, String b) {
        int n = Math.min(a.length(), b.length());
        int i = 0;
        while (i < n && a.charAt(i) == b.charAt(i)) {
            i++;
        }
        return i;
    }

    private static int commonSuffix(String a, String b) {
        int n = Math.min(a.length(), b.length());
        int i = 0;
        while (i < n && a.charAt(a.length() - 1 - i) == b.charAt(b.length() - 1 - i)) {
            i++;
        }
        return i;
    }
}
