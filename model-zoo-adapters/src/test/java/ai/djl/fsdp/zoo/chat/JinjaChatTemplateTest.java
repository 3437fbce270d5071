package ai.djl.fsdp.zoo.chat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.Gson;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tokenizers' own chat templates, as published in their {@code tokenizer_config.json}: rendered
 * with Hugging Face's conventions, and the assistant's spans found by rendering prefixes.
 */
class JinjaChatTemplateTest {

    /** Meta-Llama-3-8B-Instruct's template. */
    static final String LLAMA3 =
            "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content ="
                + " '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n"
                + "\\n"
                + "'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set"
                + " content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if"
                + " add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n"
                + "\\n"
                + "' }}{% endif %}";

    /** Qwen2-7B-Instruct's template (a default system message). */
    static final String QWEN2 =
            "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system'"
                    + " %}{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{%"
                    + " endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] +"
                    + " '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{"
                    + " '<|im_start|>assistant\\n' }}{% endif %}";

    /** zephyr-7b-beta's template (its block tags on their own lines: trim_blocks matters). */
    static final String ZEPHYR =
            "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\\n'"
                    + " + message['content'] + eos_token }}\n{% elif message['role'] == 'system'"
                    + " %}\n{{ '<|system|>\\n' + message['content'] + eos_token }}\n{% elif"
                    + " message['role'] == 'assistant' %}\n{{ '<|assistant|>\\n'  +"
                    + " message['content'] + eos_token }}\n{% endif %}\n{% if loop.last and"
                    + " add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor"
                    + " %}";

    /** Mistral-7B-Instruct-v0.1's template (raise_exception for roles out of turn). */
    static final String MISTRAL =
            "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') !="
                    + " (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must"
                    + " alternate user/assistant/user/assistant/...') }}{% endif %}{% if"
                    + " message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]'"
                    + " }}{% elif message['role'] == 'assistant' %}{{ message['content'] +"
                    + " eos_token + ' ' }}{% else %}{{ raise_exception('Only user and assistant"
                    + " roles are supported!') }}{% endif %}{% endfor %}";

    private static final List<Map<String, String>> CHAT =
            List.of(
                    Map.of("role", "user", "content", "What is 2 + 3?"),
                    Map.of("role", "assistant", "content", "5"),
                    Map.of("role", "user", "content", "And 4 + 4?"),
                    Map.of("role", "assistant", "content", "8"));

    private static String assistantText(List<ChatTemplate.Span> spans) {
        return spans.stream()
                .filter(ChatTemplate.Span::assistant)
                .map(ChatTemplate.Span::text)
                .collect(Collectors.joining("|"));
    }

    private static String all(List<ChatTemplate.Span> spans) {
        return spans.stream().map(ChatTemplate.Span::text).collect(Collectors.joining());
    }

    @Test
    void llama3() {
        JinjaChatTemplate template =
                JinjaChatTemplate.of(LLAMA3, "<|begin_of_text|>", "<|eot_id|>");
        String text = template.apply(CHAT.subList(0, 1), true);
        assertEquals(
                "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2 +"
                        + " 3?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
                text);
        List<ChatTemplate.Span> spans = template.render(CHAT, null, true);
        assertEquals(template.apply(CHAT, false), all(spans), "no character lost or repeated");
        assertEquals("5<|eot_id|>|8<|eot_id|>", assistantText(spans));
    }

    @Test
    void qwen2() {
        JinjaChatTemplate template = JinjaChatTemplate.of(QWEN2, null, "<|im_end|>");
        List<ChatTemplate.Span> spans = template.render(CHAT, null, true);
        assertTrue(all(spans).startsWith("<|im_start|>system\nYou are a helpful assistant."));
        assertEquals(template.apply(CHAT, false), all(spans));
        assertEquals("5<|im_end|>\n|8<|im_end|>\n", assistantText(spans));
    }

    @Test
    void zephyrTrimsBlocksAsHuggingFaceDoes() {
        JinjaChatTemplate template = JinjaChatTemplate.of(ZEPHYR, "<s>", "</s>");
        assertEquals(
                "<|user|>\nWhat is 2 + 3?</s>\n<|assistant|>\n5</s>\n",
                template.apply(CHAT.subList(0, 2), false));
        assertEquals(
                "<|user|>\nWhat is 2 + 3?</s>\n<|assistant|>\n",
                template.generationPrompt(CHAT.subList(0, 1)));
        List<ChatTemplate.Span> spans = template.render(CHAT, null, true);
        assertEquals("5</s>\n|8</s>\n", assistantText(spans));
    }

    @Test
    void mistralRaisesForRolesOutOfTurn() {
        JinjaChatTemplate template = JinjaChatTemplate.of(MISTRAL, "<s>", "</s>");
        assertEquals(
                "<s>[INST] What is 2 + 3? [/INST]5</s> [INST] And 4 + 4? [/INST]8</s> ",
                template.apply(CHAT, false));
        assertEquals("5</s> |8</s> ", assistantText(template.render(CHAT, null, true)));
        IllegalArgumentException error =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> template.apply(CHAT.subList(1, 2), false));
        assertTrue(
                error.getMessage().contains("Conversation roles must alternate"),
                error.getMessage());
    }

    @Test
    void aTemplateThatIsNotPrefixStableIsNamed() {
        // Drops earlier replies' text once a later turn exists (as reasoning templates do).
        String unstable =
                "{% for message in messages %}{% if message['role'] == 'assistant' and not"
                        + " loop.last %}<a>{% else %}<{{ message['role'] }}>{{ message['content']"
                        + " }}{% endif %}{% endfor %}{% if add_generation_prompt %}<assistant>{%"
                        + " endif %}";
        JinjaChatTemplate template = JinjaChatTemplate.of(unstable, null, "</s>");
        IllegalArgumentException error =
                assertThrows(
                        IllegalArgumentException.class, () -> template.render(CHAT, null, true));
        assertTrue(error.getMessage().contains("is not prefix-stable"), error.getMessage());
        assertTrue(error.getMessage().contains("--completion_only_loss False"));
        assertEquals(
                1, template.render(CHAT, null, false).size(), "without it: one span, no check");
    }

    @Test
    void anUnknownFilterFunctionOrTagOrASyntaxErrorIsNamedNotRenderedSilently() {
        for (String[] bad :
                new String[][] {
                    {
                        "{{ messages[0]['content'] | no_such_filter }}",
                        "unknown filter 'no_such_filter'"
                    },
                    {"{{ no_such_function(1) }}", "no_such_function"},
                    {"{% no_such_tag %}x", "no_such_tag"},
                    {"{% for message in messages %}{{ message['content'] }}", "endfor"}
                }) {
            IllegalArgumentException error =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> JinjaChatTemplate.of(bad[0], null, "</s>").apply(CHAT, false),
                            bad[0]);
            assertTrue(error.getMessage().contains(bad[1]), error.getMessage());
            assertTrue(error.getMessage().contains("is not usable Jinja"), error.getMessage());
        }
        // An undefined variable renders empty, as Jinja's does; a '|' in a string is no filter.
        assertEquals(
                "<|x|>5",
                JinjaChatTemplate.of("{{ '<|x|>' | trim }}{{ tools }}5", null, "</s>")
                        .apply(CHAT, false));
    }

    @Test
    void readsTokenizerConfigWithAddedTokenObjects(@TempDir Path directory) throws Exception {
        Path config = directory.resolve(ChatTemplate.CONFIG_FILE);
        Files.writeString(
                config,
                "{\"bos_token\": {\"content\": \"<s>\", \"special\": true}, \"eos_token\":"
                        + " \"</s>\", \"chat_template\": [{\"name\": \"tool_use\", \"template\":"
                        + " \"x\"}, {\"name\": \"default\", \"template\": "
                        + new Gson().toJson(MISTRAL)
                        + "}]}");
        JinjaChatTemplate template = JinjaChatTemplate.read(config);
        assertEquals("</s>", template.endOfTurn());
        assertTrue(template.apply(CHAT, false).startsWith("<s>[INST] "));
        Files.writeString(config, "{\"eos_token\": \"</s>\"}");
        assertEquals(null, JinjaChatTemplate.read(config), "no chat_template: none");
    }

    /**
     * A list of named templates: as transformers' get_chat_template chooses, a conversation with
     * tools takes "tool_use" and any other "default"; a list that breaks that is named.
     */
    @Test
    void namedTemplatesAreChosenAsTransformersChooses(@TempDir Path directory) throws Exception {
        Path config = directory.resolve(ChatTemplate.CONFIG_FILE);
        List<Map<String, String>> tools = List.of(Map.of("name", "add"));
        String both =
                "{\"name\": \"default\", \"template\": \"D{{ messages | length }}\"},"
                        + " {\"name\": \"tool_use\", \"template\": \"T{{ tools | length }}\"}";
        Files.writeString(config, "{\"chat_template\": [" + both + "]}");
        JinjaChatTemplate template = JinjaChatTemplate.read(config);
        assertEquals("D4", template.apply(CHAT, false));
        assertEquals("T1", template.apply(CHAT, tools, false));
        assertEquals("T1", template.withVariables(Map.of("x", 1)).apply(CHAT, tools, false));

        Files.writeString(
                config, "{\"chat_template\": [{\"name\": \"default\", \"template\": \"D\"}]}");
        assertEquals("D", JinjaChatTemplate.read(config).apply(CHAT, tools, false));

        Files.writeString(
                config, "{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"T\"}]}");
        JinjaChatTemplate toolUse = JinjaChatTemplate.read(config);
        assertEquals("T", toolUse.apply(CHAT, tools, false));
        IllegalArgumentException noDefault =
                assertThrows(IllegalArgumentException.class, () -> toolUse.apply(CHAT, false));
        assertEquals(
                "the tokenizer's chat template ("
                        + config
                        + ") has a \"tool_use\" template but no \"default\" one, which a"
                        + " conversation without tools takes: add a template named \"default\""
                        + " to chat_template",
                noDefault.getMessage());

        for (String[] bad :
                new String[][] {
                    {"{\"name\": \"default\"}", "template"},
                    {"{\"template\": \"D\"}", "name"},
                    {"\"D\"", "name"}
                }) {
            Files.writeString(config, "{\"chat_template\": [" + bad[0] + "]}");
            IllegalArgumentException e =
                    assertThrows(
                            IllegalArgumentException.class, () -> JinjaChatTemplate.read(config));
            assertEquals(
                    config
                            + ": each entry of a chat_template list is {\"name\": ...,"
                            + " \"template\": ...}, but "
                            + bad[0].replace(" ", "")
                            + " has no \""
                            + bad[1]
                            + "\" string: give it one",
                    e.getMessage());
        }
        Files.writeString(
                config, "{\"chat_template\": [{\"name\": \"rag\", \"template\": \"R\"}]}");
        IllegalArgumentException unnamed =
                assertThrows(IllegalArgumentException.class, () -> JinjaChatTemplate.read(config));
        assertEquals(
                config
                        + ": chat_template names the templates [rag], none of them \"default\" (or"
                        + " \"tool_use\" for conversations with tools), so none would be chosen:"
                        + " name the one to train with \"default\"",
                unnamed.getMessage());
    }
}
