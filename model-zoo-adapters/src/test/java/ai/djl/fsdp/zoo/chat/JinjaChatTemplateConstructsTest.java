package ai.djl.fsdp.zoo.chat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.ToNumberPolicy;
import com.google.gson.reflect.TypeToken;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The constructs the published chat templates of Llama 3.x, Mistral, Qwen2.5 and Qwen3 use, in
 * templates of this project's own written in their styles ({@code *.jinja} beside {@code
 * cases.json}): {@code namespace()}, {@code loop.first}/{@code last}/{@code index0}, {@code
 * raise_exception}, {@code add_generation_prompt}, a system message taken from {@code
 * messages[0]['role']}, tool calls and tools, {@code tojson} (with {@code indent}), {@code trim},
 * Python's string methods, {@code messages[::-1]}. Each renders exactly as Jinja itself renders it
 * under Hugging Face's settings: {@code cases.json} holds Jinja's outputs, written by {@code
 * expected.py} beside it.
 */
class JinjaChatTemplateConstructsTest {

    private static final String RESOURCES = "/ai/djl/fsdp/zoo/chat/";

    /** Two questions and their answers. */
    static final List<Map<String, String>> CHAT =
            List.of(
                    Map.of("role", "user", "content", "2 + 3?"),
                    Map.of("role", "assistant", "content", "5"),
                    Map.of("role", "user", "content", "4 + 4?"),
                    Map.of("role", "assistant", "content", "8"));

    @Test
    void rendersAsJinjaDoesUnderHuggingFacesSettings() throws IOException {
        List<Map<String, Object>> cases = cases();
        assertEquals(11, cases.size());
        for (Map<String, Object> c : cases) {
            String name = (String) c.get("template");
            JinjaChatTemplate template =
                    JinjaChatTemplate.of(resource(name + ".jinja"), "<s>", "</s>");
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> messages = (List<Map<String, Object>>) c.get("messages");
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> tools = (List<Map<String, Object>>) c.get("tools");
            boolean prompt = (Boolean) c.get("add_generation_prompt");
            String title = name + ": " + c.get("title");
            if (c.containsKey("raises")) {
                IllegalArgumentException error =
                        assertThrows(
                                IllegalArgumentException.class,
                                () -> template.apply(messages, tools, prompt),
                                title);
                assertEquals(
                        "the tokenizer's chat template refuses this conversation: "
                                + c.get("raises"),
                        error.getMessage(),
                        title);
            } else {
                assertEquals(c.get("expected"), template.apply(messages, tools, prompt), title);
            }
        }
    }

    @Test
    void findsTheAssistantsSpansOfATemplateWithNamespaceAndLoopVariables() throws IOException {
        JinjaChatTemplate template =
                JinjaChatTemplate.of(resource("turns-style.jinja"), "<s>", "</s>");
        List<ChatTemplate.Span> spans = template.render(CHAT, null, true);
        assertEquals(
                " 5</s>| 8</s>",
                spans.stream()
                        .filter(ChatTemplate.Span::assistant)
                        .map(ChatTemplate.Span::text)
                        .collect(Collectors.joining("|")));
        assertEquals(
                template.apply(CHAT, false),
                spans.stream().map(ChatTemplate.Span::text).collect(Collectors.joining()));
    }

    @Test
    void pythonStringMethodsBehaveAsPythons() {
        String[][] cases = {
            {"{{ '  a b  '.strip() }}|{{ 'xxaxx'.strip('x') }}", "a b|a"},
            {"{{ '\\n\\na\\n'.lstrip('\\n') }}|{{ '  a  '.rstrip() }}|", "a\n|  a|"},
            {"{{ 'a  b\\tc'.split() | join(',') }}", "a,b,c"},
            {"{{ 'a,b,,c'.split(',') | join('|') }}|{{ 'a,b,c'.split(',', 1)[-1] }}", "a|b||c|b,c"},
            {"{{ 'tool_x'.startswith('tool') }}{{ 'x.py'.endswith(('.js', '.py')) }}", "TrueTrue"},
            {"{{ 'Ab'.upper() }}{{ 'Ab'.lower() }}", "ABab"},
            {"{{ ', '.join(['a', 'b']) }}", "a, b"},
            {"{{ [1, 2, 3][::-1] | join }}|{{ '[::-1]' }}", "321|[::-1]"},
            {
                "{{ {'a': 1, 'b': [True, None, 'x\"y\\n']} | tojson }}",
                "{\"a\": 1, \"b\": [true, null, \"x\\\"y\\n\"]}"
            },
            {"{{ {'b': 1, 'a': []} | tojson(sort_keys=true) }}", "{\"a\": [], \"b\": 1}"},
            {"{% for k, v in {'a': 1} | items %}{{ k }}={{ v }}{% endfor %}", "a=1"},
        };
        for (String[] c : cases) {
            assertEquals(c[1], JinjaChatTemplate.of(c[0], null, "</s>").apply(CHAT, false), c[0]);
        }
    }

    @Test
    void aConstructTheRendererLacksIsNamedInOneError() {
        String[][] cases = {
            {"{% for m in messages recursive %}{{ m.content }}{% endfor %}", "recursive"},
            {"{% for m in messages[::2] %}{{ m.content }}{% endfor %}", "slices with a step"},
            {"{% generation %}{{ messages[1].content }}{% endgeneration %}", "generation"},
            {"{{ messages[0].content.casefold() }}", "casefold"},
            {"{{ messages | no_such_filter }}", "unknown filter 'no_such_filter'"},
        };
        for (String[] c : cases) {
            IllegalArgumentException error =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> JinjaChatTemplate.of(c[0], null, "</s>").apply(CHAT, false),
                            c[0]);
            assertTrue(error.getMessage().contains(c[1]), error.getMessage());
            assertTrue(error.getMessage().contains("is not usable Jinja"), error.getMessage());
        }
        // A conditional expression in parentheses is no loop filter.
        assertEquals(
                "2 + 3?",
                JinjaChatTemplate.of(
                                "{% for m in (messages if true else []) %}{{ m.content }}{% break"
                                        + " %}{% endfor %}",
                                null, "</s>")
                        .apply(CHAT, false));
    }

    private static List<Map<String, Object>> cases() throws IOException {
        Gson gson =
                new GsonBuilder().setObjectToNumberStrategy(ToNumberPolicy.LONG_OR_DOUBLE).create();
        return gson.fromJson(
                resource("cases.json"), new TypeToken<List<Map<String, Object>>>() {}.getType());
    }

    private static String resource(String name) throws IOException {
        try (InputStream in =
                JinjaChatTemplateConstructsTest.class.getResourceAsStream(RESOURCES + name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
