package ai.djl.fsdp.zoo.chat;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.tag.ForTag;
import com.hubspot.jinjava.tree.TagNode;
import com.hubspot.jinjava.tree.parse.TagToken;
import com.hubspot.jinjava.util.ForLoop;
import com.hubspot.jinjava.util.ObjectIterator;
import com.hubspot.jinjava.util.ObjectTruthValue;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Jinja's {@code for} tag with its loop filter, {@code {% for k, v in d.items() if k != "return"
 * %}}, which Jinjava's lacks: the items the test keeps are the loop's, so {@code loop.index},
 * {@code loop.first} and {@code loop.last} count only them, as in Jinja. A loop without a filter is
 * Jinjava's own.
 */
final class FilteredForTag extends ForTag {

    private static final long serialVersionUID = 1L;

    @Override
    public String interpretUnchecked(TagNode tagNode, JinjavaInterpreter interpreter) {
        var varsAndExpression = getLoopVarsAndExpression((TagToken) tagNode.getMaster());
        String expression = varsAndExpression.getRight();
        int filter = filterAt(expression);
        if (filter < 0) {
            return super.interpretUnchecked(tagNode, interpreter);
        }
        List<String> loopVars = varsAndExpression.getLeft();
        String test = expression.substring(filter + " if ".length());
        int line = tagNode.getLineNumber();
        Object collection = interpreter.resolveELExpression(expression.substring(0, filter), line);
        List<Object> kept = new ArrayList<>();
        try (JinjavaInterpreter.InterpreterScopeClosable scope = interpreter.enterScope()) {
            ForLoop items = ObjectIterator.getLoop(collection);
            while (items.hasNext()) {
                Object item = items.next();
                bind(interpreter, loopVars, item);
                if (ObjectTruthValue.evaluate(interpreter.resolveELExpression(test, line))) {
                    kept.add(item);
                }
            }
        }
        return renderForCollection(tagNode, interpreter, loopVars, kept);
    }

    /** Binds the loop's names to an item as the loop will: one name, or a pair or list unpacked. */
    private static void bind(JinjavaInterpreter interpreter, List<String> names, Object item) {
        if (names.size() == 1) {
            interpreter.getContext().put(names.get(0), item);
            return;
        }
        List<Object> parts = new ArrayList<>();
        if (item instanceof Map.Entry<?, ?> entry) {
            parts.add(entry.getKey());
            parts.add(entry.getValue());
        } else if (item instanceof List<?> list) {
            parts.addAll(list);
        }
        for (int i = 0; i < names.size(); i++) {
            interpreter.getContext().put(names.get(i), i < parts.size() ? parts.get(i) : null);
        }
    }

    /**
     * Returns where the loop's {@code if} filter starts (the space before it) in the text after
     * {@code in}, or -1: an {@code if} outside brackets and string literals (Jinja parses the
     * iterable without conditional expressions, so such an {@code if} is always the filter).
     */
    static int filterAt(String expression) {
        int depth = 0;
        char quote = 0;
        for (int i = 0; i < expression.length(); i++) {
            char c = expression.charAt(i);
            if (quote != 0) {
                if (c == '\\') {
                    i++;
                } else if (c == quote) {
                    quote = 0;
                }
            } else if (c == '\'' || c == '"') {
                quote = c;
            } else if (c == '(' || c == '[' || c == '{') {
                depth++;
            } else if (c == ')' || c == ']' || c == '}') {
                depth--;
            } else if (depth == 0
                    && Character.isWhitespace(c)
                    && expression.startsWith("if", i + 1)
                    && i + 3 < expression.length()
                    && Character.isWhitespace(expression.charAt(i + 3))) {
                return i;
            }
        }
        return -1;
    }
}
