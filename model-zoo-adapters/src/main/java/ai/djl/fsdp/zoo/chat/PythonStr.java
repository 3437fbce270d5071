package ai.djl.fsdp.zoo.chat;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.interpret.Context;
import com.hubspot.jinjava.interpret.InterpreterFactory;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import java.lang.reflect.Array;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;

/**
 * Python's {@code str} of a value, which Jinja prints for {@code {{ x }}} and gives for {@code
 * x|string}: {@code True} and {@code False}, a list as {@code ['a', 1, None]}, a dict as {@code
 * {'k': 'v'}}, a float as {@code repr} writes it; where Jinjava writes {@code true}, {@code
 * [true]}, {@code {k=v}}. A none printed alone stays empty: Jinjava cannot tell it from an
 * undefined variable, which Jinja prints empty.
 */
final class PythonStr {

    private PythonStr() {}

    /**
     * Returns Python's {@code str} of a value.
     *
     * @param value the value
     * @return the text, empty for null
     */
    static String str(Object value) {
        if (value == null) {
            return "";
        }
        return value instanceof CharSequence text ? text.toString() : repr(value);
    }

    /** Python's {@code repr}: strings quoted, the rest as {@link #str} but {@code None}. */
    private static String repr(Object value) {
        if (value == null) {
            return "None";
        } else if (value instanceof CharSequence text) {
            return quoted(text.toString());
        } else if (value instanceof Boolean flag) {
            return flag ? "True" : "False";
        } else if (value instanceof Double || value instanceof Float) {
            return PythonJson.pythonFloat(((Number) value).doubleValue());
        } else if (value instanceof Map<?, ?> map) {
            StringJoiner out = new StringJoiner(", ", "{", "}");
            map.forEach((k, v) -> out.add(repr(k) + ": " + repr(v)));
            return out.toString();
        } else if (value instanceof Iterable<?> || value.getClass().isArray()) {
            StringJoiner out = new StringJoiner(", ", "[", "]");
            items(value).forEach(item -> out.add(repr(item)));
            return out.toString();
        } else if (value instanceof Map.Entry<?, ?> entry) {
            return "(" + repr(entry.getKey()) + ", " + repr(entry.getValue()) + ")";
        }
        return value.toString();
    }

    private static List<Object> items(Object value) {
        List<Object> items = new ArrayList<>();
        if (value instanceof Iterable<?> iterable) {
            iterable.forEach(items::add);
        } else {
            for (int i = 0; i < Array.getLength(value); i++) {
                items.add(Array.get(value, i));
            }
        }
        return items;
    }

    /** A string as Python quotes it: single quotes, or double if it holds only single ones. */
    private static String quoted(String text) {
        char quote = text.indexOf('\'') >= 0 && text.indexOf('"') < 0 ? '"' : '\'';
        StringBuilder out = new StringBuilder().append(quote);
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c == quote) {
                        out.append('\\').append(c);
                    } else if (c < 0x20 || c == 0x7f) {
                        out.append(String.format("\\x%02x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append(quote).toString();
    }

    /** Makes the interpreters that print values as Python's {@code str}. */
    static final class Interpreters implements InterpreterFactory {

        @Override
        public JinjavaInterpreter newInstance(JinjavaInterpreter orig) {
            return new Printing(orig);
        }

        @Override
        public JinjavaInterpreter newInstance(
                Jinjava application, Context context, JinjavaConfig renderConfig) {
            return new Printing(application, context, renderConfig);
        }
    }

    /** Jinjava's interpreter, printing values as Python's {@code str}. */
    private static final class Printing extends JinjavaInterpreter {

        Printing(JinjavaInterpreter orig) {
            super(orig);
        }

        Printing(Jinjava application, Context context, JinjavaConfig renderConfig) {
            super(application, context, renderConfig);
        }

        @Override
        public String getAsString(Object object) {
            return str(object);
        }
    }
}
