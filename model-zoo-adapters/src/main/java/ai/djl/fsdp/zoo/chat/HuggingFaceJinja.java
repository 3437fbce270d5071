package ai.djl.fsdp.zoo.chat;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.el.JinjavaInterpreterResolver;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.interpret.RenderResult;
import com.hubspot.jinjava.lib.filter.Filter;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import java.util.ArrayList;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import jinjava.javax.el.CompositeELResolver;

/**
 * Jinja as Hugging Face's {@code transformers} renders chat templates, on Jinjava: blocks trimmed
 * and left-stripped, whitespace control on expressions and comments too, Jinja's operator
 * precedence, {@code raise_exception(message)}, {@code tojson} as Python's {@code json.dumps}
 * ({@link PythonJson}), the {@code items} filter, Python's string methods ({@link PythonStrings}),
 * and {@code seq[::-1]} (read as {@code seq|reverse|list}). {@link #prepare} refuses, naming it, a
 * construct Jinjava would render wrong without a word: a loop's inline {@code if} filter, a
 * recursive loop, a slice with another step, an unknown filter.
 */
final class HuggingFaceJinja {

    private static final Jinjava JINJAVA = newJinjava();

    /** A block tag or an expression, its inside in group 2. */
    private static final Pattern TAG =
            Pattern.compile("(\\{[{%]-?)(.*?)(-?[}%]\\})", Pattern.DOTALL);

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
     * Checks a template for what Jinjava would render wrong silently, and spells the reversing
     * slice as a filter.
     *
     * @param template the Jinja text
     * @return the text to render
     * @throws IllegalArgumentException naming the construct that is not supported
     */
    static String prepare(String template) {
        StringBuilder prepared = new StringBuilder();
        Matcher tag = TAG.matcher(template);
        while (tag.find()) {
            String inside = tag.group(2);
            String code = STRING.matcher(inside).replaceAll("''");
            boolean block = tag.group(1).startsWith("{%");
            Matcher loop = FOR.matcher(code);
            if (block && loop.matches()) {
                String iterable = withoutParentheses(loop.group(1));
                if (iterable.matches("(?s).*\\sif\\s.*")) {
                    throw new IllegalArgumentException(
                            "a for loop with an inline if filter ({% for x in items if test %}) is"
                                    + " not supported: write the test as an {% if %} inside the"
                                    + " loop, or select the items first (| selectattr)");
                }
                if (iterable.matches("(?s).*\\srecursive\\s*")) {
                    throw new IllegalArgumentException("recursive for loops are not supported");
                }
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
            tag.appendReplacement(
                    prepared, Matcher.quoteReplacement(tag.group(1) + reversed + tag.group(3)));
        }
        tag.appendTail(prepared);
        return prepared.toString();
    }

    /**
     * Renders a prepared template.
     *
     * @param template the text {@link #prepare} returned
     * @param bindings the variables
     * @return the output and the errors
     */
    static RenderResult render(String template, Map<String, Object> bindings) {
        return JINJAVA.renderForResult(template, bindings);
    }

    /**
     * Called by templates as {@code raise_exception(message)}.
     *
     * @param message the template's reason
     * @return never
     * @throws Raised always
     */
    public static String raiseException(String message) {
        throw new Raised(message);
    }

    /** What {@code raise_exception} throws: the template's own reason to refuse a conversation. */
    static final class Raised extends RuntimeException {

        private static final long serialVersionUID = 1L;

        Raised(String message) {
            super(message);
        }
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

    private static Jinjava newJinjava() {
        CompositeELResolver resolver = new CompositeELResolver();
        resolver.add(new PythonStrings());
        resolver.add(JinjavaInterpreterResolver.DEFAULT_RESOLVER_READ_ONLY);
        Jinjava jinjava =
                new Jinjava(
                        JinjavaConfig.newBuilder()
                                .withTrimBlocks(true)
                                .withLstripBlocks(true)
                                .withElResolver(resolver)
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
                                                .build())
                                .build());
        jinjava.getGlobalContext()
                .registerFunction(
                        new ELFunctionDefinition(
                                "",
                                "raise_exception",
                                HuggingFaceJinja.class,
                                "raiseException",
                                String.class));
        jinjava.getGlobalContext().registerFilter(new PythonJson());
        jinjava.getGlobalContext()
                .registerFilter(
                        new Filter() {
                            @Override
                            public String getName() {
                                return "items";
                            }

                            @Override
                            public Object filter(
                                    Object value, JinjavaInterpreter interpreter, String... args) {
                                return value instanceof Map<?, ?> map
                                        ? new ArrayList<>(map.entrySet())
                                        : value;
                            }
                        });
        return jinjava;
    }
}
