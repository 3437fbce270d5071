package ai.djl.fsdp.zoo.chat;

import com.hubspot.jinjava.interpret.Context;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.exptest.ExpTest;
import com.hubspot.jinjava.lib.filter.Filter;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import java.util.ArrayList;
import java.util.Map;

/**
 * What a chat template may use beyond Jinjava's own library, as {@code transformers}' environment
 * and Jinja define it: the functions {@code raise_exception} and {@code strftime_now} (defined
 * names too, so {@code strftime_now is defined} holds), the filters {@code tojson} ({@link
 * PythonJson}), {@code items}, {@code string} and {@code trim} (Python's {@code str(value)} and
 * {@code str(value).strip()}, so {@code none|trim} is {@code None}), the test {@code iterable}
 * (true for strings, as in Jinja), and the {@code for} tag with loop filters ({@link
 * FilteredForTag}).
 */
final class JinjaLibrary {

    private JinjaLibrary() {}

    /**
     * Registers the library in a context.
     *
     * @param context the global context of the Jinjava that renders templates
     */
    static void register(Context context) {
        function(context, "raise_exception", TemplateFailure.class, "raiseException");
        function(context, "strftime_now", Strftime.class, "now");
        context.registerFilter(new PythonJson());
        context.registerFilter(
                filter(
                        "items",
                        (value, args) ->
                                value instanceof Map<?, ?> map
                                        ? new ArrayList<>(map.entrySet())
                                        : value));
        context.registerFilter(
                filter(
                        "trim",
                        (value, args) -> {
                            String chars = args.length > 0 ? args[0] : null;
                            String text = value == null ? "None" : PythonStr.str(value);
                            return PythonStrings.rstrip(PythonStrings.lstrip(text, chars), chars);
                        }));
        context.registerFilter(
                filter("string", (value, args) -> value == null ? "None" : PythonStr.str(value)));
        context.registerExpTest(
                new ExpTest() {
                    @Override
                    public String getName() {
                        return "iterable";
                    }

                    @Override
                    public boolean evaluate(
                            Object value, JinjavaInterpreter interpreter, Object... args) {
                        return value instanceof CharSequence
                                || value instanceof Iterable
                                || value instanceof Map
                                || value != null && value.getClass().isArray();
                    }
                });
        context.registerTag(new FilteredForTag());
    }

    /** Registers a static method as a function, and its name as a defined variable. */
    private static void function(Context context, String name, Class<?> owner, String method) {
        ELFunctionDefinition definition =
                new ELFunctionDefinition("", name, owner, method, String.class);
        context.registerFunction(definition);
        context.put(name, definition);
    }

    /** A filter of a value and its text arguments. */
    private interface Body {
        Object apply(Object value, String[] args);
    }

    private static Filter filter(String name, Body body) {
        return new Filter() {
            @Override
            public String getName() {
                return name;
            }

            @Override
            public Object filter(Object value, JinjavaInterpreter interpreter, String... args) {
                return body.apply(value, args);
            }
        };
    }
}
