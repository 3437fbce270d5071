package ai.djl.fsdp.zoo.chat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.ToNumberPolicy;
import com.google.gson.reflect.TypeToken;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Type;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Released models' chat templates ({@code corpus/}, each taken byte for byte from a public source
 * its README names) over a set of conversations ({@code conversations.json}), rendered as {@code
 * transformers} renders them: {@code expected.json} holds Jinja2's outputs and errors under
 * transformers' settings, written by {@code tools/chat-templates/render.py}. Every case must come
 * out byte for byte the same, or be refused as Jinja refuses it.
 */
class JinjaChatTemplateCorpusTest {

    static final String CORPUS = "/ai/djl/fsdp/zoo/chat/corpus/";

    /** The script that writes expected.json, from the repository's root. */
    private static final String RENDER = "tools/chat-templates/render.py";

    /** The instant render.py's fixed local time names, read in UTC. */
    static final Clock CLOCK = Clock.fixed(Instant.parse("2026-12-05T09:30:00Z"), ZoneOffset.UTC);

    private static final Gson GSON =
            new GsonBuilder()
                    .serializeNulls()
                    .setObjectToNumberStrategy(ToNumberPolicy.LONG_OR_DOUBLE)
                    .create();

    @Test
    void everyTemplateRendersEveryConversationAsTransformersDoes() throws IOException {
        Map<String, Map<String, Object>> cases = new LinkedHashMap<>();
        for (Map<String, Object> c : conversations()) {
            cases.put((String) c.get("name"), c);
        }
        Map<String, Object> expected = json("expected.json", new TypeToken<>() {});
        @SuppressWarnings("unchecked")
        List<Map<String, String>> results = (List<Map<String, String>>) expected.get("results");
        assertEquals(templates().size() * cases.size(), results.size());
        List<String> wrong = new ArrayList<>();
        int equal = 0;
        int refused = 0;
        for (Map<String, String> result : results) {
            String title = result.get("template") + " x " + result.get("case");
            Map<String, Object> c = cases.get(result.get("case"));
            String output;
            try {
                output = render(template(result.get("template")), c);
            } catch (IllegalArgumentException e) {
                if (result.containsKey("raises")
                                && e.getMessage()
                                        .endsWith(
                                                "refuses this conversation: "
                                                        + result.get("raises"))
                        || result.containsKey("error")
                                && e.getMessage().contains("failed on a conversation")) {
                    refused++;
                } else {
                    wrong.add(title + ": threw " + e.getMessage() + "\n  expected " + result);
                }
                continue;
            }
            if (output.equals(result.get("output"))) {
                equal++;
            } else {
                wrong.add(title + ":\n--- got\n" + output + "\n--- expected\n" + result);
            }
        }
        assertTrue(wrong.isEmpty(), wrong.size() + " cases differ:\n" + String.join("\n", wrong));
        assertEquals(results.size(), equal + refused);
    }

    /**
     * Where a Python with Jinja2 is installed ({@code apt-get install -y python3-jinja2}), the
     * build re-renders the corpus with {@code tools/chat-templates/render.py} and finds the
     * checked-in outputs; elsewhere they stand as checked in.
     */
    @Test
    void theCheckedInOutputsAreJinjasOwn(@TempDir Path directory) throws Exception {
        String python = python();
        assumeTrue(python != null, "no python3 with jinja2 here: the checked-in outputs stand");
        Path corpus = Path.of("src/test/resources" + CORPUS).toAbsolutePath();
        List<String> names = new ArrayList<>(templates().keySet());
        names.addAll(List.of("templates.json", "conversations.json"));
        for (String name : names) {
            Files.copy(corpus.resolve(name), directory.resolve(name));
        }
        // Tests run in the module's directory, one below the repository's root.
        Path script = Path.of("").toAbsolutePath().getParent().resolve(RENDER);
        Process process =
                new ProcessBuilder(python, script.toString(), directory.toString())
                        .redirectErrorStream(true)
                        .start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, process.waitFor(), output);
        Map<String, Object> fresh =
                GSON.fromJson(
                        Files.readString(directory.resolve("expected.json")),
                        new TypeToken<Map<String, Object>>() {}.getType());
        Map<String, Object> checkedIn = json("expected.json", new TypeToken<>() {});
        assertEquals(checkedIn.get("results"), fresh.get("results"));
    }

    /** Returns a Python that imports jinja2, or null. */
    private static String python() throws InterruptedException {
        for (String candidate : List.of("/usr/bin/python3", "python3")) {
            try {
                Process check =
                        new ProcessBuilder(candidate, "-c", "import jinja2")
                                .redirectErrorStream(true)
                                .start();
                check.getInputStream().readAllBytes();
                if (check.waitFor() == 0) {
                    return candidate;
                }
            } catch (IOException absent) {
                // not installed: try the next
            }
        }
        return null;
    }

    /** Renders a case as render.py does. */
    @SuppressWarnings("unchecked")
    static String render(JinjaChatTemplate template, Map<String, Object> c) {
        return template.apply(
                (List<Map<String, Object>>) c.get("messages"),
                (List<Map<String, Object>>) c.get("tools"),
                (Map<String, Object>) c.get("variables"),
                (Boolean) c.get("add_generation_prompt"));
    }

    /** Returns a corpus template with its special tokens and the fixed clock. */
    static JinjaChatTemplate template(String name) throws IOException {
        Map<String, String> tokens = templates().get(name);
        return JinjaChatTemplate.of(
                        resource(name), tokens.get("bos_token"), tokens.get("eos_token"))
                .withClock(CLOCK);
    }

    static Map<String, Map<String, String>> templates() throws IOException {
        return json("templates.json", new TypeToken<>() {});
    }

    static List<Map<String, Object>> conversations() throws IOException {
        return json("conversations.json", new TypeToken<>() {});
    }

    private static <T> T json(String name, TypeToken<T> type) throws IOException {
        Type of = type.getType();
        return GSON.fromJson(resource(name), of);
    }

    private static String resource(String name) throws IOException {
        try (InputStream in =
                JinjaChatTemplateCorpusTest.class.getResourceAsStream(CORPUS + name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
