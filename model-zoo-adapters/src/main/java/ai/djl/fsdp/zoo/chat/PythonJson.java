package ai.djl.fsdp.zoo.chat;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.filter.Filter;
import java.lang.reflect.Array;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The {@code tojson} filter as Hugging Face defines it for chat templates: Python's {@code
 * json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=sort_keys)}, so a tool's schema or
 * a call's arguments render as {@code transformers} renders them ({@code {"a": 2}}: a space after
 * each colon and comma; with {@code indent}, one item a line), where Jinjava's own gives {@code
 * {"a":2}}.
 */
final class PythonJson implements Filter {

    @Override
    public String getName() {
        return "tojson";
    }

    @Override
    public Object filter(Object value, JinjavaInterpreter interpreter, String... args) {
        Integer indent = args.length > 0 && args[0] != null ? Integer.valueOf(args[0]) : null;
        return dumps(value, indent, false);
    }

    @Override
    public Object filter(
            Object value,
            JinjavaInterpreter interpreter,
            Object[] args,
            Map<String, Object> kwargs) {
        Object indent = kwargs.getOrDefault("indent", args.length > 0 ? args[0] : null);
        Object sortKeys = kwargs.get("sort_keys");
        return dumps(
                value,
                indent == null ? null : ((Number) indent).intValue(),
                Boolean.TRUE.equals(sortKeys));
    }

    /**
     * Writes a value as Python's {@code json.dumps} does with {@code ensure_ascii=False}.
     *
     * @param value a map, list, array, string, number, boolean or null
     * @param indent spaces per level, or null for one line
     * @param sortKeys whether a map's keys are written in order
     * @return the JSON text
     */
    static String dumps(Object value, Integer indent, boolean sortKeys) {
        StringBuilder out = new StringBuilder();
        write(out, value, indent, sortKeys, 0);
        return out.toString();
    }

    private static void write(
            StringBuilder out, Object value, Integer indent, boolean sortKeys, int level) {
        List<String> keys = null;
        List<Object> items = new ArrayList<>();
        if (value == null) {
            out.append("null");
            return;
        } else if (value instanceof Boolean || value instanceof Number) {
            out.append(value);
            return;
        } else if (value instanceof Map<?, ?> map) {
            keys = new ArrayList<>();
            for (Map.Entry<?, ?> entry : (sortKeys ? new TreeMap<>(map) : map).entrySet()) {
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
            writeString(out, value.toString());
            return;
        }
        out.append(keys == null ? '[' : '{');
        for (int i = 0; i < items.size(); i++) {
            out.append(i == 0 ? "" : indent == null ? ", " : ",");
            if (indent != null) {
                out.append('\n').append(" ".repeat(indent * (level + 1)));
            }
            if (keys != null) {
                writeString(out, keys.get(i));
                out.append(": ");
            }
            write(out, items.get(i), indent, sortKeys, level + 1);
        }
        if (indent != null && !items.isEmpty()) {
            out.append('\n').append(" ".repeat(indent * level));
        }
        out.append(keys == null ? ']' : '}');
    }

    private static void writeString(StringBuilder out, String text) {
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
                    if (c < 0x20) {
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
