package ai.djl.fsdp.zoo.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.zoo.chat.ChatTemplate;
import ai.djl.fsdp.zoo.chat.JinjaChatTemplate;
import ai.djl.fsdp.zoo.chat.TokenizerJson;
import ai.djl.fsdp.zoo.finetune.data.ByteLevelTokenizer;
import ai.djl.fsdp.zoo.finetune.data.Document;
import ai.djl.fsdp.zoo.finetune.data.Sequences;
import ai.djl.fsdp.zoo.finetune.data.TextDatasets;
import ai.djl.fsdp.zoo.hf.Tokenizers;
import ai.djl.fsdp.zoo.llama.LlamaConfig;
import ai.djl.fsdp.zoo.sharded.CausalLmLoss;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Tool-calling conversations (TRL's shape: {@code messages} with {@code tool_calls} and {@code
 * tool} results, {@code tools} beside them) fine-tuned with Qwen3's and Llama 3.1's released chat
 * templates (the corpus's) on a Qwen3-style and a Llama-style checkpoint (fresh, tiny), with a
 * byte-level tokenizer given each template's special tokens: the loss mask covers exactly the
 * assistant's replies, the calls and the answers with their closing tokens, and nothing else; and
 * finetune trains on them.
 */
class ToolCallingFinetuneTest {

    private static final String CORPUS = "/ai/djl/fsdp/zoo/chat/corpus/";

    private static final Map<String, Object> WEATHER =
            Map.of(
                    "type",
                    "function",
                    "function",
                    Map.of(
                            "name",
                            "get_weather",
                            "description",
                            "Today's weather in a city.",
                            "parameters",
                            Map.of(
                                    "type",
                                    "object",
                                    "properties",
                                    Map.of("city", Map.of("type", "string")),
                                    "required",
                                    List.of("city"))));

    @Test
    void qwen3(@TempDir Path directory) throws Exception {
        trainsOnTheRepliesOnly(
                directory,
                "qwen3",
                "Qwen-Qwen3-0.6B.jinja",
                null,
                "<|im_end|>",
                List.of(
                        "<|im_start|>",
                        "<|im_end|>",
                        "<tool_call>",
                        "</tool_call>",
                        "<tool_response>",
                        "</tool_response>",
                        "<think>",
                        "</think>"));
    }

    @Test
    void llama31(@TempDir Path directory) throws Exception {
        trainsOnTheRepliesOnly(
                directory,
                "llama",
                "meta-llama-Llama-3.1-8B-Instruct.jinja",
                "<|begin_of_text|>",
                "<|eot_id|>",
                List.of(
                        "<|begin_of_text|>",
                        "<|start_header_id|>",
                        "<|end_header_id|>",
                        "<|eot_id|>",
                        "<|eom_id|>",
                        "<|python_tag|>"));
    }

    private static void trainsOnTheRepliesOnly(
            Path directory,
            String modelType,
            String template,
            String bos,
            String eos,
            List<String> specials)
            throws Exception {
        Path tokenizer = tokenizer(Files.createDirectory(directory.resolve("tok")), specials);
        JsonObject config = new JsonObject();
        config.addProperty("chat_template", resource(template));
        config.addProperty("bos_token", bos);
        config.addProperty("eos_token", eos);
        Path configFile = tokenizer.resolveSibling(ChatTemplate.CONFIG_FILE);
        TokenizerJson.write(config, configFile);
        Path data = data(Files.createDirectory(directory.resolve("data")));

        List<Document> documents =
                TextDatasets.load(
                                data.toString(),
                                "train",
                                "test",
                                TextDatasets.Fields.text("text"),
                                0.05,
                                1)
                        .get("train");
        JinjaChatTemplate chat = JinjaChatTemplate.read(configFile);
        Document first = documents.get(0);
        IllegalArgumentException chatml =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> ChatTemplate.CHATML.render(first.messages(), first.tools(), true));
        assertTrue(chatml.getMessage().contains("needs the tokenizer's own chat_template"));
        try (HuggingFaceTokenizer tok = Tokenizers.load(tokenizer, "--tokenizer_name")) {
            Sequences sequences =
                    Sequences.tokenize(
                            documents,
                            tok,
                            1024,
                            Sequences.Packing.NONE,
                            chat,
                            true,
                            -1,
                            257 + specials.size());
            assertEquals(documents.size(), sequences.getSequences().size(), "none cut");
            for (int d = 0; d < documents.size(); d++) {
                Document document = documents.get(d);
                List<ChatTemplate.Span> spans =
                        chat.render(document.messages(), document.tools(), Map.of());
                String replies =
                        spans.stream()
                                .filter(ChatTemplate.Span::assistant)
                                .map(ChatTemplate.Span::text)
                                .collect(Collectors.joining());
                Sequences.Sequence sequence = sequences.getSequences().get(d);
                List<Long> trained = new ArrayList<>();
                for (long label : sequence.labels()) {
                    if (label != CausalLmLoss.IGNORE) {
                        trained.add(label);
                    }
                }
                assertEquals(
                        replies,
                        tok.decode(toArray(trained), false),
                        template + ": the trained tokens are the replies");
                assertTrue(replies.contains("get_weather") && replies.contains("°C"), replies);
                String whole = chat.apply(document.messages(), document.tools(), false);
                String inputs = tok.decode(sequence.inputs(), false);
                assertTrue(whole.startsWith(inputs), template + ": the inputs are the rendering");
            }
        }

        StringWriter out = new StringWriter();
        CommandLine line = new CommandLine(new FinetuneCommand());
        line.setOut(new PrintWriter(out));
        line.setErr(new PrintWriter(out));
        String[] args = {
            "--model_name_or_path", model(directory, modelType, 257 + specials.size()).toString(),
            "--tokenizer_name", tokenizer.toString(),
            "--dataset_name", data.toString(),
            "--max_seq_len", "1024",
            "--max_steps", "3",
            "--logging_steps", "1",
            "--learning_rate", "1e-2",
            "--per_device_train_batch_size", "4",
            "--sharding_strategy", "NO_SHARD",
            "--eval_strategy", "no",
            "--output_dir", directory.resolve("out").toString()
        };
        assertEquals(0, line.execute(args), out.toString());
        assertTrue(
                out.toString().contains("exact_match before training: no eval conversation"),
                "exact match asks no tool conversation: " + out);
        List<Double> losses = FinetuneCommandTest.losses(out.toString(), 3);
        assertTrue(losses.get(2) < losses.get(0), template + " trains: " + losses);
    }

    /**
     * A checkpoint directory of config.json only (fresh weights): {@code llama-tiny} or, as {@code
     * qwen3-tiny}, with Qwen3's query and key norms, its heads of 32 and a tied head; 1024
     * positions, for the tools' system prompts in bytes.
     */
    private static Path model(Path directory, String modelType, int vocabSize) throws Exception {
        JsonObject json = LlamaConfig.of(2, 64, 4, 2, 128, 1024).toJson();
        json.addProperty("model_type", modelType);
        json.addProperty("vocab_size", vocabSize);
        if ("qwen3".equals(modelType)) {
            json.addProperty("head_dim", 32);
            json.addProperty("tie_word_embeddings", true);
        }
        Path model = Files.createDirectory(directory.resolve(modelType + "-tiny"));
        TokenizerJson.write(json, model.resolve("config.json"));
        return model;
    }

    /** A byte-level tokenizer with a template's special tokens added. */
    private static Path tokenizer(Path directory, List<String> specials) throws Exception {
        Path base = directory.resolve("base.json");
        ByteLevelTokenizer.write(base);
        JsonObject json = JsonParser.parseString(Files.readString(base)).getAsJsonObject();
        int id = 257;
        for (String special : specials) {
            json.getAsJsonArray("added_tokens").add(TokenizerJson.addedToken(id++, special));
        }
        Path file = directory.resolve("tokenizer.json");
        TokenizerJson.write(json, file);
        Files.delete(base);
        return file;
    }

    /** Weather questions answered through a tool: train and test splits, TRL's JSON lines. */
    private static Path data(Path directory) throws Exception {
        Gson gson = new GsonBuilder().disableHtmlEscaping().create();
        String[] cities = {"Oslo", "Lima", "Pune", "Kyiv", "Cork", "Nice", "Bern", "Riga", "Baku"};
        List<String> train = new ArrayList<>();
        for (int i = 0; i < cities.length; i++) {
            String city = cities[i];
            Map<String, Object> call = new LinkedHashMap<>();
            call.put("id", "call0000" + i);
            call.put("type", "function");
            call.put("function", Map.of("name", "get_weather", "arguments", Map.of("city", city)));
            List<Map<String, Object>> messages =
                    List.of(
                            Map.of("role", "system", "content", "Use the tools."),
                            Map.of("role", "user", "content", "Weather in " + city + "?"),
                            Map.of("role", "assistant", "content", "", "tool_calls", List.of(call)),
                            Map.of(
                                    "role",
                                    "tool",
                                    "tool_call_id",
                                    "call0000" + i,
                                    "content",
                                    "{\"temperature\": " + (i * 3 - 5) + "}"),
                            Map.of(
                                    "role",
                                    "assistant",
                                    "content",
                                    "It is " + (i * 3 - 5) + " °C in " + city + "."));
            train.add(gson.toJson(Map.of("messages", messages, "tools", List.of(WEATHER))));
        }
        Files.write(directory.resolve("train.jsonl"), train);
        Files.write(directory.resolve("test.jsonl"), train.subList(0, 2));
        return directory;
    }

    private static long[] toArray(List<Long> ids) {
        return ids.stream().mapToLong(Long::longValue).toArray();
    }

    private static String resource(String name) throws Exception {
        try (InputStream in = ToolCallingFinetuneTest.class.getResourceAsStream(CORPUS + name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
