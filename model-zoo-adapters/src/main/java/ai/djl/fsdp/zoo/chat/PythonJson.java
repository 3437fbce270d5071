package ai.djl.fsdp.zoo.chat;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.filter.Filter;
import java.lang.reflect.Array;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The {@code tojson} filter as Hugging Face defines it for chat templates: {@code tojson(x,
 * ensure_ascii=False, indent=None, separators=None, sort_keys=False)} is Python's {@code
 * json.dumps} with those arguments, so a tool's schema or a call's arguments render as {@code
 * transformers} renders them ({@code {"a": 2}}: a space after each colon and comma; with {@code
 * indent}, one item a line and no space after the comma), where Jinjava's own gives {@code
 * {"a":2}}. Floats are written as Python's {@code repr} writes them ({@code 1e-05}, {@code 1.0}).
 */
final class PythonJson implements Filter {

    private static final List<String> PARAMETERS =
            List.of("ensure_ascii", "indent", "separators", "sort_keys");

    @Override
    public String getName() {
        return "tojson";
    }

    @Override
    public Object filter(Object value, JinjavaInterpreter interpreter, String... args) {
        return filter(value, interpreter, args, Map.of());
    }

    @Override
    public Object filter(
            Object value,
            JinjavaInterpreter interpreter,
            Object[] args,
            Map<String, Object> kwargs) {
        Map<String, Object> named = new HashMap<>(kwargs);
        for (int i = 0; i < args.length && i < PARAMETERS.size(); i++) {
            named.put(PARAMETERS.get(i), args[i]);
        }
        Object indent = named.get("indent");
        Options options =
                new Options(
                        indent == null ? null : Integer.valueOf(indent.toString()),
                        named.get("separators") instanceof List<?> pair
                                ? List.of(pair.get(0).toString(), pair.get(1).toString())
                                : null,
                        Boolean.TRUE.equals(named.get("ensure_ascii")),
                        Boolean.TRUE.equals(named.get("sort_keys")));
        StringBuilder out = new StringBuilder();
        write(out, value, options, 0);
        return out.toString();
    }

    /** {@code json.dumps}'s arguments; separators null for its default. */
    private record Options(
            Integer indent, List<String> separators, boolean ensureAscii, boolean sortKeys) {

        String itemSeparator() {
            return separators != null ? separators.get(0) : indent == null ? ", " : ",";
        }

        String keySeparator() {
            return separators != null ? separators.get(1) : ": ";
        }
    }

    private static void write(StringBuilder out, Object value, Options options, int level) {
        List<String> keys = null;
        List<Object> items = new ArrayList<>();
        if (value == null) {
            out.append("null");
            return;
        } else if (value instanceof Double || value instanceof Float) {
            out.append(pythonFloat(((Number) value).doubleValue()));
            return;
        } else if (value instanceof Boolean || value instanceof Number) {
            out.append(value);
            return;
        } else if (value instanceof Map<?, ?> map) {
            keys = new ArrayList<>();
            Map<?, ?> ordered = options.sortKeys() ? new TreeMap<>(map) : map;
            for (Map.Entry<?, ?> entry : ordered.entrySet()) {
                keys.add(String.valueOf(entry.getKey()));
                items.add(entry.getValue());
            }
        } else if (value instanceof Iterable<?> iterable) {
            iterable.forEach(items::add);
        } else if (value.getClass().isArray()) {
            for (int i = 0; i < Array.getLength(value); i++) {
                items.add(Array.get(value, i));
            }
        } else {
            writeString(out, value.toString(), options.ensureAscii());
            return;
        }
        Integer indent = options.indent();
        out.append(keys == null ? '[' : '{');
        for (int i = 0; i < items.size(); i++) {
            out.append(i == 0 ? "" : options.itemSeparator());
            if (indent != null) {
                out.append('\n').append(" ".repeat(indent * (level + 1)));
            }
            if (keys != null) {
                writeString(out, keys.get(i), options.ensureAscii());
                out.append(options.keySeparator());
            }
            write(out, items.get(i), options, level + 1);
        }
        if (indent != null && !items.isEmpty()) {
            out.append('\n').append(" ".repeat(indent * level));
        }
        out.append(keys == null ? ']' : '}');
    }

    /**
     * Python's {@code repr} of a float: {@code 1.0}, {@code 0.001}, {@code 1e-05}, {@code 1e+16}.
     */
    static String pythonFloat(double d) {
        if (Double.isNaN(d)) {
            return "NaN";
        } else if (Double.isInfinite(d)) {
            return d > 0 ? "Infinity" : "-Infinity";
        }
        BigDecimal exact = new BigDecimal(Double.toString(d)).stripTrailingZeros();
        int exponent = exact.precision() - exact.scale() - 1;
        if (d != 0 && (exponent < -4 || exponent >= 16)) {
            String digits = exact.unscaledValue().abs().toString();
            String mantissa =
                    digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
            return (d < 0 ? "-" : "")
                    + mantissa
                    + (exponent < 0 ? "e-" : "e+")
                    + String.format("%02d", Math.abs(exponent));
        }
        String plain = exact.toPlainString();
        return plain.contains(".") ? plain : plain + ".0";
    }

    private static void writeString(StringBuilder out, String text, boolean ensureAscii) {
        out.append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                default -> {
                    if (c < 0x20 || ensureAscii && c > 0x7e) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }
}
