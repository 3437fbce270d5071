package ai.djl.fsdp.zoo.chat;

import java.beans.FeatureDescriptor;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.function.Predicate;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELResolver;

/**
 * Python's {@code str} methods that chat templates call on strings ({@code content.strip()}, {@code
 * role.startswith('to')}, {@code content.split('</think>')[-1].lstrip('\n')}, {@code ',
 * '.join(names)}), which Jinja has from Python and Jinjava, on Java strings, lacks: {@code
 * startswith}, {@code endswith}, {@code strip}, {@code lstrip}, {@code rstrip} (with or without the
 * characters to strip), {@code split} (on whitespace runs, or on a separator with an optional
 * limit), {@code upper}, {@code lower} and {@code join}. Other calls on a string fall through to
 * Jinjava, which names a method it cannot find.
 */
final class PythonStrings extends ELResolver {

    @Override
    public Object invoke(
            ELContext context, Object base, Object method, Class<?>[] types, Object[] params) {
        if (!(base instanceof String text) || method == null) {
            return null;
        }
        Object[] args = params == null ? new Object[0] : params;
        Object result = call(text, method.toString(), args);
        if (result != null) {
            context.setPropertyResolved(true);
        }
        return result;
    }

    /** Returns the method's result, or null where it is not one of the methods above. */
    private static Object call(String text, String method, Object[] args) {
        String chars = args.length > 0 && args[0] != null ? args[0].toString() : null;
        switch (method) {
            case "startswith":
                return args.length == 1 && matchesAny(args[0], text::startsWith);
            case "endswith":
                return args.length == 1 && matchesAny(args[0], text::endsWith);
            case "strip":
                return rstrip(lstrip(text, chars), chars);
            case "lstrip":
                return lstrip(text, chars);
            case "rstrip":
                return rstrip(text, chars);
            case "split":
                return split(text, chars, args.length > 1 ? ((Number) args[1]).intValue() : -1);
            case "upper":
                return args.length == 0 ? text.toUpperCase(Locale.ROOT) : null;
            case "lower":
                return args.length == 0 ? text.toLowerCase(Locale.ROOT) : null;
            case "join":
                return args.length == 1 && args[0] instanceof Iterable<?> items
                        ? join(text, items)
                        : null;
            default:
                return null;
        }
    }

    /** Python's {@code startswith}/{@code endswith} take a string or a tuple of strings. */
    private static boolean matchesAny(Object affixes, Predicate<String> test) {
        if (affixes instanceof Collection<?> many) {
            return many.stream().anyMatch(affix -> test.test(String.valueOf(affix)));
        }
        return test.test(String.valueOf(affixes));
    }

    private static boolean stripped(char c, String chars) {
        return chars == null ? Character.isWhitespace(c) : chars.indexOf(c) >= 0;
    }

    static String lstrip(String text, String chars) {
        int start = 0;
        while (start < text.length() && stripped(text.charAt(start), chars)) {
            start++;
        }
        return text.substring(start);
    }

    static String rstrip(String text, String chars) {
        int end = text.length();
        while (end > 0 && stripped(text.charAt(end - 1), chars)) {
            end--;
        }
        return text.substring(0, end);
    }

    /** Python's {@code split}: on whitespace runs (no empty parts) or on each separator. */
    private static List<String> split(String text, String separator, int limit) {
        List<String> parts = new ArrayList<>();
        if (separator == null) {
            String rest = text.strip();
            while (!rest.isEmpty()) {
                int at = 0;
                while (at < rest.length() && !Character.isWhitespace(rest.charAt(at))) {
                    at++;
                }
                if (limit >= 0 && parts.size() == limit) {
                    at = rest.length();
                }
                parts.add(rest.substring(0, at));
                rest = rest.substring(at).stripLeading();
            }
            return parts;
        }
        if (separator.isEmpty()) {
            throw new IllegalArgumentException("split(): empty separator");
        }
        int from = 0;
        int at;
        while ((limit < 0 || parts.size() < limit) && (at = text.indexOf(separator, from)) >= 0) {
            parts.add(text.substring(from, at));
            from = at + separator.length();
        }
        parts.add(text.substring(from));
        return parts;
    }

    private static String join(String separator, Iterable<?> items) {
        StringBuilder joined = new StringBuilder();
        boolean first = true;
        for (Object item : items) {
            if (!first) {
                joined.append(separator);
            }
            joined.append(item);
            first = false;
        }
        return joined.toString();
    }

    @Override
    public Class<?> getCommonPropertyType(ELContext context, Object base) {
        return null;
    }

    @Override
    public Iterator<FeatureDescriptor> getFeatureDescriptors(ELContext context, Object base) {
        return null;
    }

    @Override
    public Class<?> getType(ELContext context, Object base, Object property) {
        return null;
    }

    @Override
    public Object getValue(ELContext context, Object base, Object property) {
        return null;
    }

    @Override
    public boolean isReadOnly(ELContext context, Object base, Object property) {
        return true;
    }

    @Override
    public void setValue(ELContext context, Object base, Object property, Object value) {}
}
