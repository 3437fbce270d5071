package ai.djl.fsdp.zoo.chat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The assistant's replies, for the completion-only loss, found in the whole rendering of every
 * corpus template over every corpus conversation it renders: one span a reply, in order, holding
 * the reply's own text (its content after any reasoning, or its tool call, where the template
 * prints them) and its closing marker (none where the template prints nothing of the reply), and no
 * turn header or other message; the spans make the rendering exactly. Three templates that render a
 * reply otherwise once later messages follow are checked span for span.
 */
class AssistantSpansTest {

    /** What opens a turn or a message of another role in the corpus templates. */
    private static final List<String> HEADERS =
            List.of(
                    "<|im_start|>",
                    "<|start_header_id|>",
                    "[INST]",
                    "[AVAILABLE_TOOLS]",
                    "[TOOL_RESULTS]",
                    "<start_of_turn>",
                    "<|user|>",
                    "<|assistant|>",
                    "<｜User｜>",
                    "<｜Assistant｜>");

    /** What closes a reply in the corpus templates. */
    private static final List<String> CLOSINGS =
            List.of(
                    "<|im_end|>",
                    "<|eot_id|>",
                    "<|eom_id|>",
                    "</s>",
                    "<end_of_turn>",
                    "<|end|>",
                    "<|endoftext|>",
                    "<｜end▁of▁sentence｜>");

    @Test
    void everyReplyOfEveryCorpusConversationIsFoundExactly() throws IOException {
        int replies = 0;
        for (String name : JinjaChatTemplateCorpusTest.templates().keySet()) {
            JinjaChatTemplate template = JinjaChatTemplateCorpusTest.template(name);
            for (Map<String, Object> c : JinjaChatTemplateCorpusTest.conversations()) {
                String title = name + " x " + c.get("name");
                List<Map<String, Object>> messages = messages(c);
                List<Map<String, Object>> assistant =
                        messages.stream().filter(m -> "assistant".equals(m.get("role"))).toList();
                String whole;
                try {
                    whole = template.apply(messages, tools(c), variables(c), false);
                } catch (IllegalArgumentException refused) {
                    continue; // the template refuses the conversation (the corpus test checks how)
                }
                List<ChatTemplate.Span> spans = template.render(messages, tools(c), variables(c));
                assertEquals(whole, text(spans), title + ": the spans make the rendering");
                List<String> found = replies(spans);
                assertEquals(assistant.size(), found.size(), title + ": " + found);
                for (int i = 0; i < found.size(); i++) {
                    String reply = found.get(i);
                    String own = ownText(assistant.get(i));
                    assertTrue(
                            reply.contains(own) || !whole.contains(own),
                            title + ": " + reply + " holds " + own + " (where rendered)");
                    assertTrue(
                            reply.isEmpty() || CLOSINGS.stream().anyMatch(reply.strip()::endsWith),
                            title + ": " + reply + " closes the turn");
                    assertTrue(
                            HEADERS.stream().noneMatch(reply::contains),
                            title + ": " + reply + " holds no header");
                }
                replies += found.size();
            }
        }
        assertEquals(
                80, replies, "replies checked: 11 a template, less the 8 in refused conversations");
    }

    @Test
    void templatesThatRenderHistoryOtherwiseAreFoundSpanForSpan() throws IOException {
        assertEquals(
                List.of("5<|im_end|>\n", "<think>\ndouble four\n</think>\n\n8<|im_end|>\n"),
                replies("Qwen-Qwen3-0.6B.jinja", "reasoning"),
                "the reasoning of a past reply is not in the rendering, the last's is");
        assertEquals(
                List.of("5</s>", "8</s>"),
                replies("mistralai-Mistral-Nemo-Instruct-2407.jinja", "multi-turn"),
                "the system message moves before the last question");
        assertEquals(
                List.of("\n\n5<｜end▁of▁sentence｜>", "\n\n8<｜end▁of▁sentence｜>"),
                replies("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "reasoning"),
                "the prompt opens <think>, a rendered reply drops the reasoning, not the gap");
    }

    private static List<String> replies(String name, String conversation) throws IOException {
        Map<String, Object> c =
                JinjaChatTemplateCorpusTest.conversations().stream()
                        .filter(x -> conversation.equals(x.get("name")))
                        .findFirst()
                        .orElseThrow();
        return replies(
                JinjaChatTemplateCorpusTest.template(name)
                        .render(messages(c), tools(c), variables(c)));
    }

    /** A reply's own text: its content after any reasoning, or else its first call's name. */
    @SuppressWarnings("unchecked")
    private static String ownText(Map<String, Object> message) {
        String content = message.get("content") instanceof String s ? s : "";
        String answer = content.substring(content.lastIndexOf("</think>") + 1).strip();
        if (content.contains("</think>")) {
            answer =
                    content.substring(content.lastIndexOf("</think>") + "</think>".length())
                            .strip();
        }
        if (!answer.isEmpty() || !message.containsKey("tool_calls")) {
            return answer;
        }
        List<Map<String, Object>> calls = (List<Map<String, Object>>) message.get("tool_calls");
        return (String) ((Map<String, Object>) calls.get(0).get("function")).get("name");
    }

    private static List<String> replies(List<ChatTemplate.Span> spans) {
        List<String> replies = new ArrayList<>();
        spans.stream().filter(ChatTemplate.Span::assistant).forEach(s -> replies.add(s.text()));
        return replies;
    }

    private static String text(List<ChatTemplate.Span> spans) {
        return spans.stream().map(ChatTemplate.Span::text).collect(Collectors.joining());
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> messages(Map<String, Object> c) {
        return (List<Map<String, Object>>) c.get("messages");
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> tools(Map<String, Object> c) {
        return (List<Map<String, Object>>) c.get("tools");
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> variables(Map<String, Object> c) {
        return (Map<String, Object>) c.get("variables");
    }
}
