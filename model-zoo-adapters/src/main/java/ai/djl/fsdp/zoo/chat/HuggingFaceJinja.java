package ai.djl.fsdp.zoo.chat;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.el.JinjavaInterpreterResolver;
import com.hubspot.jinjava.el.TruthyTypeConverter;
import com.hubspot.jinjava.interpret.RenderResult;
import java.time.Clock;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import jinjava.de.odysseus.el.ExpressionFactoryImpl;
import jinjava.de.odysseus.el.tree.TreeBuilder;
import jinjava.javax.el.CompositeELResolver;
import jinjava.javax.el.ExpressionFactory;

/**
 * Jinja as Hugging Face's {@code transformers} renders chat templates ({@code chat_template_utils}:
 * an {@code ImmutableSandboxedEnvironment} with {@code trim_blocks}, {@code lstrip_blocks}, the
 * loop controls, {@code raise_exception}, {@code strftime_now} and its own {@code tojson}), on
 * Jinjava configured and extended to Jinja's semantics where the two differ:
 *
 * <ul>
 *   <li>output is never rendered again: a message holding {@code {{ eos_token }}}, {@code {% if %}}
 *       or {@code {# #}} comes out as written (Jinjava's nested interpretation is off);
 *   <li>whitespace control on expressions and comments as on blocks, natural operator precedence,
 *       {@code not x is defined} as {@code not (x is defined)}, whole expressions as keyword
 *       arguments, Python's {@code +} ({@link JinjaParser});
 *   <li>loop filters ({@link FilteredForTag}), iterating a dict yields its keys, {@code is
 *       iterable} holds for strings, values print as Python's {@code str} ({@link PythonStr});
 *   <li>{@code tojson} as Python's {@code json.dumps} ({@link PythonJson}), the {@code items}
 *       filter, Python's string methods ({@link PythonStrings}), {@code strftime_now} ({@link
 *       Strftime}), {@code seq[::-1]} (read as {@code seq|reverse|list}).
 * </ul>
 *
 * <p>Jinjava takes these as configuration, a parser and tags of its own: its grammar is the one
 * place it cannot be configured, so the parser is replaced through the expression factory. {@link
 * #prepare} refuses, naming it, what Jinjava would still render wrong without a word: a recursive
 * loop, a slice with another step, an unknown filter.
 */
final class HuggingFaceJinja {

    private static final CompositeELResolver RESOLVER = newResolver();

    private static final Jinjava JINJAVA = newJinjava();

    /** A comment, or a block tag or an expression: its opening in group 1, its inside in 2. */
    private static final Pattern TAG =
            Pattern.compile("\\{#.*?#}|(\\{[{%]-?)(.*?)(-?[}%]\\})", Pattern.DOTALL);

    /** A string literal, whose text may hold anything. */
    private static final Pattern STRING =
            Pattern.compile("'(?:[^'\\\\]|\\\\.)*'|\"(?:[^\"\\\\]|\\\\.)*\"");

    /** A filter applied with {@code |}. */
    private static final Pattern FILTER = Pattern.compile("\\|\\s*([A-Za-z_]\\w*)");

    /** A {@code for} tag, its iterable and what follows in group 1. */
    private static final Pattern FOR =
            Pattern.compile("^\\s*for\\s.+?\\sin\\s(.*)$", Pattern.DOTALL);

    /** A slice with a step: {@code [a:b:c]}. */
    private static final Pattern STEP_SLICE =
            Pattern.compile("\\[[^\\[\\]]*:[^\\[\\]]*:[^\\[\\]]*]");

    /** The reversing slice, which reads as the {@code reverse} filter. */
    private static final Pattern REVERSE = Pattern.compile("\\[\\s*:\\s*:\\s*-\\s*1\\s*]");

    private HuggingFaceJinja() {}

    /**
     * Checks a template for what Jinjava would render wrong silently, strips blocks' indentation as
     * Jinja's {@code lstrip_blocks} does, and spells the reversing slice as a filter.
     *
     * @param template the Jinja text
     * @return the text to render
     * @throws IllegalArgumentException naming the construct that is not supported
     */
    static String prepare(String template) {
        StringBuilder prepared = new StringBuilder();
        Matcher tag = TAG.matcher(template);
        int done = 0;
        while (tag.find()) {
            String text = template.substring(done, tag.start());
            boolean comment = tag.group(1) == null;
            boolean stripped = comment ? !tag.group().startsWith("{#-") : "{%".equals(tag.group(1));
            prepared.append(stripped ? lstripBlock(text, done == 0) : text);
            done = tag.end();
            prepared.append(comment ? tag.group() : checked(tag));
        }
        return prepared.append(template.substring(done)).toString();
    }

    /**
     * Jinja's {@code lstrip_blocks}: the spaces and tabs between the start of a line and a block or
     * comment tag go. Jinjava's own strips them before any tag, mid-line too ({@code a, {% endif
     * %}} lost its space), so the template is stripped here and Jinjava's is off.
     *
     * @param text the text before the tag
     * @param lineStarting whether the text starts a line (the template's start)
     * @return the text to keep
     */
    static String lstripBlock(String text, boolean lineStarting) {
        int lineStart = text.lastIndexOf('\n') + 1;
        if ((lineStart > 0 || lineStarting) && text.substring(lineStart).isBlank()) {
            return text.substring(0, lineStart);
        }
        return text;
    }

    /** Returns a block tag or an expression as Jinjava is to read it, or names what it lacks. */
    private static String checked(Matcher tag) {
        String inside = tag.group(2);
        String code = STRING.matcher(inside).replaceAll("''");
        boolean block = tag.group(1).startsWith("{%");
        Matcher loop = FOR.matcher(code);
        if (block
                && loop.matches()
                && withoutParentheses(loop.group(1)).matches("(?s).*\\srecursive\\s*")) {
            throw new IllegalArgumentException("recursive for loops are not supported");
        }
        Matcher filter = FILTER.matcher(code);
        while (filter.find()) {
            if (JINJAVA.getGlobalContext().getFilter(filter.group(1)) == null) {
                throw new IllegalArgumentException("unknown filter '" + filter.group(1) + "'");
            }
        }
        String reversed = reverseSlices(inside);
        if (STEP_SLICE.matcher(STRING.matcher(reversed).replaceAll("''")).find()) {
            throw new IllegalArgumentException(
                    "slices with a step other than [::-1] are not supported: "
                            + tag.group().strip());
        }
        return tag.group(1) + reversed + tag.group(3);
    }

    /**
     * Renders a prepared template.
     *
     * @param template the text {@link #prepare} returned
     * @param bindings the variables
     * @param clock the clock {@code strftime_now} reads, its zone the local one
     * @return the output and the errors
     */
    static RenderResult render(String template, Map<String, Object> bindings, Clock clock) {
        return JINJAVA.renderForResult(template, bindings, config(clock));
    }

    /** Rewrites each {@code [::-1]} outside string literals as {@code |reverse|list}. */
    private static String reverseSlices(String inside) {
        StringBuilder out = new StringBuilder();
        Matcher literal = STRING.matcher(inside);
        int done = 0;
        while (literal.find()) {
            out.append(
                    REVERSE.matcher(inside.substring(done, literal.start()))
                            .replaceAll("|reverse|list"));
            out.append(literal.group());
            done = literal.end();
        }
        out.append(REVERSE.matcher(inside.substring(done)).replaceAll("|reverse|list"));
        return out.toString();
    }

    private static CompositeELResolver newResolver() {
        CompositeELResolver resolver = new CompositeELResolver();
        resolver.add(new PythonStrings());
        resolver.add(JinjavaInterpreterResolver.DEFAULT_RESOLVER_READ_ONLY);
        return resolver;
    }

    /** Drops what is inside parentheses: an {@code if} there is a conditional expression. */
    private static String withoutParentheses(String code) {
        StringBuilder out = new StringBuilder();
        int depth = 0;
        for (char c : code.toCharArray()) {
            if (c == '(' || c == '[' || c == '{') {
                depth++;
            } else if (c == ')' || c == ']' || c == '}') {
                depth--;
            } else if (depth == 0) {
                out.append(c);
            }
        }
        return out.toString();
    }

    /** The settings of every render: Jinja's where Jinjava's differ, the clock the render's. */
    private static JinjavaConfig config(Clock clock) {
        return JinjavaConfig.newBuilder()
                .withTrimBlocks(true)
                .withLstripBlocks(false) // done by prepare, as Jinja does it
                .withNestedInterpretationEnabled(false)
                .withInterperterFactory(new PythonStr.Interpreters())
                .withElResolver(RESOLVER)
                .withDateTimeProvider(clock::millis)
                .withTimeZone(clock.getZone())
                .withLegacyOverrides(
                        LegacyOverrides.newBuilder()
                                // {{- x }} and {#- x -#} strip as {%- x -%} does
                                .withUseTrimmingForNotesAndExpressions(true)
                                .withParseWhitespaceControlStrictly(true)
                                // a + b | f is a + (b | f), as in Jinja
                                .withUseNaturalOperatorPrecedence(true)
                                .withEvaluateMapKeys(true)
                                .withKeepNullableLoopValues(true)
                                .withUsePyishObjectMapper(true)
                                .withIterateOverMapKeys(true)
                                .build())
                .build();
    }

    private static Jinjava newJinjava() {
        Jinjava jinjava = new JinjaSyntaxJinjava(config(Clock.systemDefaultZone()));
        JinjaLibrary.register(jinjava.getGlobalContext());
        return jinjava;
    }

    /** Jinjava whose expressions are parsed by {@link JinjaParser}. */
    private static final class JinjaSyntaxJinjava extends Jinjava {

        private final ExpressionFactory expressions;

        JinjaSyntaxJinjava(JinjavaConfig config) {
            super(config);
            Properties properties = new Properties();
            properties.setProperty(
                    TreeBuilder.class.getName(), JinjaParser.JinjaSyntaxBuilder.class.getName());
            expressions = new ExpressionFactoryImpl(properties, new TruthyTypeConverter());
        }

        @Override
        public ExpressionFactory getExpressionFactory() {
            return expressions;
        }
    }
}
