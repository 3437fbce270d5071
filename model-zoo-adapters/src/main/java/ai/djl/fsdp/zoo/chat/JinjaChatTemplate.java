package ai.djl.fsdp.zoo.chat;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.hubspot.jinjava.interpret.RenderResult;
import com.hubspot.jinjava.interpret.TemplateError;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Clock;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A tokenizer's own chat template: the Jinja {@code chat_template} of its {@code
 * tokenizer_config.json}, rendered as Hugging Face renders it ({@code HuggingFaceJinja}; {@code
 * messages}, {@code tools}, {@code add_generation_prompt}, {@code bos_token} and {@code eos_token}
 * defined). The assistant's spans, for the completion-only loss, are found in the rendering of the
 * whole conversation ({@code AssistantSpans}).
 */
public final class JinjaChatTemplate implements ChatFormat {

    /** The name of the template a conversation without tools takes, in a list of named ones. */
    private static final String DEFAULT = "default";

    /** The name of the template a conversation with tools takes, in a list of named ones. */
    private static final String TOOL_USE = "tool_use";

    /** The variables the renderer binds itself. */
    private static final Set<String> RESERVED =
            Set.of("messages", "tools", "add_generation_prompt", "bos_token", "eos_token");

    /** The template of conversations without tools ({@code default}), or null if none. */
    private final String template;

    /** The template of conversations with tools ({@code tool_use}), or null if none. */
    private final String toolTemplate;

    private final String prepared;
    private final String toolPrepared;
    private final String bosToken;
    private final String eosToken;
    private final Path source;
    private final Map<String, Object> variables;
    private final Clock clock;

    private JinjaChatTemplate(
            String template,
            String toolTemplate,
            String bosToken,
            String eosToken,
            Path source,
            Map<String, Object> variables,
            Clock clock) {
        this.template = template;
        this.toolTemplate = toolTemplate;
        this.bosToken = bosToken;
        this.eosToken = eosToken;
        this.source = source;
        this.variables = Collections.unmodifiableMap(new HashMap<>(variables));
        this.clock = clock;
        this.prepared = prepare(template);
        this.toolPrepared = prepare(toolTemplate);
    }

    private JinjaChatTemplate(
            String template, String toolTemplate, String bosToken, String eosToken, Path source) {
        this(
                template,
                toolTemplate,
                bosToken,
                eosToken,
                source,
                Map.of(),
                Clock.systemDefaultZone());
    }

    /** Prepares a template for Jinjava, or returns null for none. */
    private String prepare(String text) {
        try {
            return text == null ? null : HuggingFaceJinja.prepare(text);
        } catch (IllegalArgumentException e) {
            throw invalid(e.getMessage());
        }
    }

    /**
     * Returns a template.
     *
     * @param template the Jinja text
     * @param bosToken the {@code bos_token} it may use
     * @param eosToken the {@code eos_token} it may use, also the end of a reply
     * @return the template
     */
    public static JinjaChatTemplate of(String template, String bosToken, String eosToken) {
        return new JinjaChatTemplate(template, null, bosToken, eosToken, null);
    }

    /**
     * Returns this template with extra variables for every rendering, as the keyword arguments of
     * Hugging Face's {@code apply_chat_template(..., **kwargs)} ({@code enable_thinking}, {@code
     * date_string}, {@code documents}, {@code custom_tools}); they replace those given before.
     *
     * @param variables the names and values (strings, numbers, booleans, lists and maps as in JSON)
     * @return the template with the variables
     * @throws IllegalArgumentException if a name is one the renderer binds itself
     */
    public JinjaChatTemplate withVariables(Map<String, ?> variables) {
        for (String name : variables.keySet()) {
            if (RESERVED.contains(name)) {
                throw new IllegalArgumentException(
                        "the chat template variable '"
                                + name
                                + "' is bound by the renderer itself (from the conversation, the"
                                + " tools or the tokenizer): leave it out of the extra variables");
            }
        }
        Map<String, Object> merged = new HashMap<>(this.variables);
        merged.putAll(variables);
        return new JinjaChatTemplate(
                template, toolTemplate, bosToken, eosToken, source, merged, clock);
    }

    /**
     * Returns this template rendering with a clock for {@code strftime_now}: its time, in its zone,
     * is the local time Python's {@code datetime.now()} would give.
     *
     * @param clock the clock
     * @return the template with the clock
     */
    public JinjaChatTemplate withClock(Clock clock) {
        return new JinjaChatTemplate(
                template, toolTemplate, bosToken, eosToken, source, variables, clock);
    }

    /**
     * Returns the extra variables every rendering gets.
     *
     * @return the names and values
     */
    public Map<String, Object> getVariables() {
        return variables;
    }

    /**
     * Reads the template of a {@code tokenizer_config.json}: one template, or a list of named ones
     * ({@code {"name": ..., "template": ...}}) of which, as Hugging Face's {@code
     * apply_chat_template} chooses, a conversation with tools takes {@code tool_use} (if there is
     * one) and any other {@code default}.
     *
     * @param config the file
     * @return the template, or null if the file is absent or has no {@code chat_template}
     * @throws IOException if the file cannot be read
     * @throws IllegalArgumentException naming the file if a named template lacks its name or text,
     *     or none is named {@code default} or {@code tool_use}
     */
    public static JinjaChatTemplate read(Path config) throws IOException {
        if (config == null || !Files.isRegularFile(config)) {
            return null;
        }
        JsonObject root =
                JsonParser.parseString(Files.readString(config, StandardCharsets.UTF_8))
                        .getAsJsonObject();
        JsonElement template = root.get("chat_template");
        Map<String, String> named = new LinkedHashMap<>();
        if (template != null && template.isJsonArray()) {
            for (JsonElement entry : template.getAsJsonArray()) {
                named.put(text(entry, "name", config), text(entry, "template", config));
            }
            if (!named.containsKey(DEFAULT) && !named.containsKey(TOOL_USE)) {
                throw new IllegalArgumentException(
                        config
                                + ": chat_template names the templates "
                                + named.keySet()
                                + ", none of them \"default\" (or \"tool_use\" for"
                                + " conversations with tools), so none would be chosen: name the"
                                + " one to train with \"default\"");
            }
        } else if (template != null && template.isJsonPrimitive()) {
            named.put(DEFAULT, template.getAsString());
        } else {
            return null;
        }
        return new JinjaChatTemplate(
                named.get(DEFAULT),
                named.get(TOOL_USE),
                TokenizerJson.specialToken(root.get("bos_token")),
                TokenizerJson.specialToken(root.get("eos_token")),
                config);
    }

    /** Returns a string field of a named template, or fails naming the file and the field. */
    private static String text(JsonElement entry, String field, Path config) {
        JsonElement value = entry.isJsonObject() ? entry.getAsJsonObject().get(field) : null;
        if (value == null || !value.isJsonPrimitive()) {
            throw new IllegalArgumentException(
                    config
                            + ": each entry of a chat_template list is {\"name\": ...,"
                            + " \"template\": ...}, but "
                            + entry
                            + " has no \""
                            + field
                            + "\" string: give it one");
        }
        return value.getAsString();
    }

    /**
     * Renders a conversation with the template.
     *
     * @param messages the messages
     * @param addGenerationPrompt whether to open the assistant's next reply
     * @return the text
     * @throws IllegalArgumentException if the template fails (its {@code raise_exception} too) or
     *     uses what is not defined (an unknown filter, function or tag) or is not valid Jinja
     */
    public String apply(List<? extends Map<String, ?>> messages, boolean addGenerationPrompt) {
        return apply(messages, null, Map.of(), addGenerationPrompt);
    }

    /**
     * Renders a conversation with tools the model may call, as Hugging Face's {@code
     * apply_chat_template(messages, tools=tools)} does: messages may hold {@code tool_calls} (a
     * list of maps) and tool results ({@code role} {@code tool}), each tool is its JSON schema.
     *
     * @param messages the messages, their values strings, lists and maps as in JSON
     * @param tools the tools' schemas, or null for none
     * @param addGenerationPrompt whether to open the assistant's next reply
     * @return the text
     * @throws IllegalArgumentException if the template fails (its {@code raise_exception} too) or
     *     uses what is not defined (an unknown filter, function or tag) or is not valid Jinja
     */
    public String apply(
            List<? extends Map<String, ?>> messages,
            List<? extends Map<String, ?>> tools,
            boolean addGenerationPrompt) {
        return apply(messages, tools, Map.of(), addGenerationPrompt);
    }

    /**
     * Renders a conversation with tools and extra variables, as Hugging Face's {@code
     * apply_chat_template(messages, tools=tools, add_generation_prompt=..., **variables)} does; the
     * variables are added to those of {@link #withVariables}.
     *
     * @param messages the messages, their values strings, lists and maps as in JSON
     * @param tools the tools' schemas, or null for none
     * @param variables the template's extra variables ({@code enable_thinking}, {@code
     *     date_string}, ...)
     * @param addGenerationPrompt whether to open the assistant's next reply
     * @return the text
     * @throws IllegalArgumentException if the template fails (its {@code raise_exception} too) or
     *     uses what is not defined (an unknown filter, function or tag) or is not valid Jinja
     */
    public String apply(
            List<? extends Map<String, ?>> messages,
            List<? extends Map<String, ?>> tools,
            Map<String, ?> variables,
            boolean addGenerationPrompt) {
        Map<String, Object> bindings =
                new HashMap<>(
                        variables.isEmpty() ? this.variables : withVariables(variables).variables);
        bindings.put("messages", messages);
        bindings.put("tools", tools);
        bindings.putIfAbsent("documents", null);
        bindings.put("add_generation_prompt", addGenerationPrompt);
        bindings.put("bos_token", bosToken == null ? "" : bosToken);
        bindings.put("eos_token", eosToken == null ? "" : eosToken);
        RenderResult result = HuggingFaceJinja.render(chosen(tools), bindings, clock);
        for (TemplateError error : result.getErrors()) {
            for (Throwable cause = error.getException(); cause != null; cause = cause.getCause()) {
                if (cause instanceof TemplateFailure failure) {
                    throw new IllegalArgumentException(
                            named()
                                    + (failure.raisedByTemplate()
                                            ? " refuses this conversation: "
                                            : " failed on a conversation: ")
                                    + cause.getMessage());
                }
            }
            boolean syntax = error.getReason() == TemplateError.ErrorReason.SYNTAX_ERROR;
            if (error.getSeverity() == TemplateError.ErrorType.FATAL && !syntax) {
                throw new IllegalArgumentException(
                        named() + " failed on a conversation: " + error.getMessage());
            }
            // An undefined variable renders empty, as in Jinja; any other problem (an unknown
            // function or tag, a syntax error) would render the text wrong silently.
            if (syntax
                    || error.getReason() != TemplateError.ErrorReason.UNKNOWN
                    || error.getItem() != TemplateError.ErrorItem.PROPERTY) {
                throw invalid(error.getMessage() + " (line " + error.getLineno() + ")");
            }
        }
        return result.getOutput();
    }

    @Override
    public List<ChatTemplate.Span> render(
            List<? extends Map<String, ?>> messages,
            List<? extends Map<String, ?>> tools,
            boolean findAssistant) {
        if (!findAssistant) {
            return List.of(new ChatTemplate.Span(apply(messages, tools, false), false));
        }
        return render(messages, tools, Map.of());
    }

    /**
     * Renders a conversation as spans, the assistant's replies marked as {@link AssistantSpans}
     * finds them in the whole rendering: what the model writes after each generation prompt, its
     * closing text included.
     *
     * @param messages the messages, their values strings, lists and maps as in JSON
     * @param tools the tools' schemas, or null for none
     * @param variables the template's extra variables
     * @return the spans, whose texts make {@code apply(messages, tools, variables, false)}
     * @throws IllegalArgumentException if the template fails, or a reply cannot be found
     */
    public List<ChatTemplate.Span> render(
            List<? extends Map<String, ?>> messages,
            List<? extends Map<String, ?>> tools,
            Map<String, ?> variables) {
        return new AssistantSpans((part, prompt) -> apply(part, tools, variables, prompt), named())
                .find(messages);
    }

    @Override
    public String generationPrompt(List<? extends Map<String, ?>> messages) {
        return apply(messages, true);
    }

    @Override
    public String endOfTurn() {
        return eosToken;
    }

    @Override
    public boolean addsMarkers() {
        return false;
    }

    @Override
    public void writeConfig(Path directory) throws IOException {
        Path target = directory.resolve(ChatTemplate.CONFIG_FILE);
        if (source != null) {
            Files.copy(source, target, StandardCopyOption.REPLACE_EXISTING);
            return;
        }
        JsonObject config = new JsonObject();
        config.addProperty("chat_template", template);
        config.addProperty("bos_token", bosToken);
        config.addProperty("eos_token", eosToken);
        TokenizerJson.write(config, target);
    }

    /**
     * Returns the prepared template a conversation takes, as Hugging Face's {@code
     * get_chat_template} chooses among named ones: with tools {@code tool_use} if there is one,
     * else {@code default}.
     */
    private String chosen(List<? extends Map<String, ?>> tools) {
        if (tools != null && toolPrepared != null) {
            return toolPrepared;
        }
        if (prepared == null) {
            throw new IllegalArgumentException(
                    named()
                            + " has a \"tool_use\" template but no \"default\" one, which a"
                            + " conversation without tools takes: add a template named"
                            + " \"default\" to chat_template");
        }
        return prepared;
    }

    /** Names the template in an error: the tokenizer's, and the file it was read from. */
    private String named() {
        return "the tokenizer's chat template" + (source == null ? "" : " (" + source + ")");
    }

    /** The error for a template that is not usable Jinja. */
    private IllegalArgumentException invalid(String problem) {
        return new IllegalArgumentException(
                "the tokenizer's chat template"
                        + (source == null ? "" : " (chat_template in " + source + ")")
                        + " is not usable Jinja: "
                        + problem
                        + "; fix the template (Jinja's own filters, functions and tags,"
                        + " raise_exception, strftime_now, tojson, items and Python's string"
                        + " methods are defined), or train with --chat_template_format chatml");
    }
}
