package ai.djl.fsdp.zoo.chat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Where Jinjava's semantics differ from Jinja's, the renderer has Jinja's: each expected text is
 * what Jinja2 3.1 renders under {@code transformers}' settings (checked with Python), and each case
 * failed or rendered otherwise before.
 */
class JinjaSemanticsTest {

    private static final List<Map<String, String>> CHAT = JinjaChatTemplateConstructsTest.CHAT;

    private static String render(String template) {
        return JinjaChatTemplate.of(template, "<s>", "</s>").apply(CHAT, false);
    }

    @Test
    void messageTextIsDataNeverTemplate() {
        String content =
                "{{ eos_token }} {{ user.name }} {% if true %}yes{% endif %} {# kept #} {%- raw %}";
        List<Map<String, String>> chat = List.of(Map.of("role", "user", "content", content));
        JinjaChatTemplate template =
                JinjaChatTemplate.of(
                        "{% for m in messages %}[{{ m.content }}]{{ eos_token }}{% endfor %}",
                        "<s>", "</s>");
        assertEquals("[" + content + "]</s>", template.apply(chat, false));
    }

    @Test
    void notBindsLooserThanTestsAndComparisons() {
        assertEquals(
                "False",
                render(
                        "{% if not add_generation_prompt is defined %}{% set add_generation_prompt"
                                + " = true %}{% endif %}{{ 'True' if add_generation_prompt else"
                                + " 'False' }}"));
        assertEquals("reset", render("{% if not undefined_thing is defined %}reset{% endif %}"));
        assertEquals(
                "no|yes|yes",
                render(
                        "{{ 'yes' if not tools is none else 'no' }}|{{ 'yes' if not messages is"
                                + " none else 'no' }}|{{ 'yes' if not 1 == 2 else 'no' }}"));
    }

    @Test
    void aNameBeforeElseIsNoNamespace() {
        assertEquals(
                "a|4",
                render(
                        "{% set flag = true %}{{ 'a' if flag else raise_exception('unreached')"
                                + " }}|{{ 'x' if not flag else messages|length }}"));
    }

    @Test
    void aKeywordArgumentIsAWholeExpression() {
        assertEquals(
                "3,7",
                render(
                        "{% set ns = namespace(last=messages|length - 1, twice=2 * 3 + 1) %}{{"
                                + " ns.last }},{{ ns.twice }}"));
    }

    @Test
    void aLoopFilterKeepsItsItemsAndTheLoopCountsOnlyThem() {
        assertEquals(
                "1/2:2 + 3?, 2/2:4 + 4?",
                render(
                        "{% for m in messages if m.role == 'user' %}{{ loop.index }}/{{"
                                + " loop.length }}:{{ m.content }}{% if not loop.last %}, {% endif"
                                + " %}{% endfor %}"));
        assertEquals(
                "a=1;b=3;",
                render(
                        "{% for k, v in {'a': 1, 'return': 2, 'b': 3}.items() if k != 'return'"
                                + " %}{{ k }}={{ v }};{% endfor %}"));
        assertEquals("xy", render("{% for k in {'x': 1, 'y': 2} %}{{ k }}{% endfor %}"));
        assertEquals(-1, FilteredForTag.filterAt("(a if b else c)"));
        assertEquals(-1, FilteredForTag.filterAt("x['if'] | list"));
        assertEquals(5, FilteredForTag.filterAt("items if k"));
    }

    @Test
    void blocksAreLeftStrippedOnlyFromTheStartOfTheirLine() {
        assertEquals(
                "a, b\nc  d\ne f gh",
                render(
                        "  {% if true %}a, {% endif %}b\n"
                                + "  {% if true %}\n"
                                + "c{% endif %}\n"
                                + "{# x #}  d\n"
                                + "\t{# y #}\n"
                                + "e {{ 'f' }} {% if true %}g{% endif %}\n"
                                + "    {%- if true %}h{% endif %}"));
    }

    @Test
    void aStringIsIterable() {
        assertEquals(
                "yes,yes,no",
                render(
                        "{{ 'yes' if 'abc' is iterable else 'no' }},{{ 'yes' if messages is"
                                + " iterable else 'no' }},{{ 'yes' if 3 is iterable else 'no' }}"));
    }

    @Test
    void plusIsPythonsAndFailsOnMixedOperands() {
        assertEquals("ab|3|[1, 2]", render("{{ 'a' + 'b' }}|{{ 1 + 2 }}|{{ [1] + [2] }}"));
        for (String bad : List.of("{{ 'a' + none }}", "{{ 'a' + 1 }}", "{{ [1] + 'a' }}")) {
            IllegalArgumentException error =
                    assertThrows(IllegalArgumentException.class, () -> render(bad), bad);
            assertTrue(error.getMessage().contains("failed on a conversation: TypeError"), bad);
        }
    }

    @Test
    void tojsonIsTransformersJsonDumps() {
        assertEquals(
                "{\n  \"a\": [\n    1,\n    2.5,\n    1e-05\n  ],\n  \"b\": \"é\"\n}",
                render(
                        "{{ {'b': 'é', 'a': [1, 2.5, 1e-05]} | tojson(indent=2, sort_keys=true)"
                                + " }}"));
        assertEquals(
                "{\"b\": \"\\u00e9\"}|[1,{\"k\":\"v\"}]",
                render(
                        "{{ {'b': 'é'} | tojson(ensure_ascii=true) }}|{{ [1, {'k': 'v'}] |"
                                + " tojson(separators=(',', ':')) }}"));
        assertEquals(
                "1e+16|0.0001|-2.0",
                PythonJson.pythonFloat(1e16)
                        + "|"
                        + PythonJson.pythonFloat(1e-4)
                        + "|"
                        + PythonJson.pythonFloat(-2));
    }

    @Test
    void strftimeNowReadsTheTemplatesClockInItsZone() {
        Clock clock = Clock.fixed(Instant.parse("2026-12-05T08:30:00Z"), ZoneId.of("Europe/Oslo"));
        JinjaChatTemplate template =
                JinjaChatTemplate.of(
                                "{{ strftime_now('%d %b %Y, %A %H:%M:%S %p %j %-d/%-m') }}|{{"
                                        + " 'yes' if strftime_now is defined else 'no' }}",
                                null, "</s>")
                        .withClock(clock);
        assertEquals("05 Dec 2026, Saturday 09:30:00 AM 339 5/12|yes", template.apply(CHAT, false));
    }

    @Test
    void valuesPrintAsPythonsStr() {
        assertEquals(
                "True|[1, 'a', None, True, 2.5]|{'k': \"it's\"}|None|3|a\nb|['a\\nb']|True",
                render(
                        "{{ true }}|{{ [1, 'a', none, true, 2.5] }}|{{ {'k': \"it's\"} }}|{{"
                                + " none|string }}|{{ 3 }}|{{ 'a\\nb' }}|{{ ['a\\nb'] }}|{{ 1 =="
                                + " 1 }}"));
    }

    @Test
    void trimOfNoneIsNoneAsPythonWritesIt() {
        assertEquals("None|x", render("{{ none | trim }}|{{ '  x  ' | trim }}"));
    }

    @Test
    void extraVariablesReachTheTemplate() {
        JinjaChatTemplate template =
                JinjaChatTemplate.of(
                        "{{ 'think' if enable_thinking is not defined or enable_thinking else"
                                + " 'quiet' }} {{ date_string }}",
                        null,
                        "</s>");
        assertEquals("think ", template.apply(CHAT, false));
        JinjaChatTemplate quiet = template.withVariables(Map.of("enable_thinking", false));
        assertEquals("quiet ", quiet.apply(CHAT, false));
        assertEquals(
                "quiet 05 Dec 2026",
                quiet.apply(CHAT, null, Map.of("date_string", "05 Dec 2026"), false));
        assertEquals("think ", quiet.apply(CHAT, null, Map.of("enable_thinking", true), false));
        IllegalArgumentException error =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> template.withVariables(Map.of("messages", List.of())));
        assertTrue(error.getMessage().contains("'messages' is bound by the renderer"));
    }
}
