package ai.djl.fsdp.zoo.chat;

import com.hubspot.jinjava.el.ExtendedSyntaxBuilder;
import com.hubspot.jinjava.el.ext.AdditionOperator;
import com.hubspot.jinjava.el.ext.ExtendedParser;
import com.hubspot.jinjava.el.ext.NamedParameterOperator;
import java.util.Collection;
import java.util.Locale;
import java.util.Map;
import jinjava.de.odysseus.el.misc.TypeConverter;
import jinjava.de.odysseus.el.tree.impl.Builder;
import jinjava.de.odysseus.el.tree.impl.Parser;
import jinjava.de.odysseus.el.tree.impl.Scanner;
import jinjava.de.odysseus.el.tree.impl.ast.AstBinary;
import jinjava.de.odysseus.el.tree.impl.ast.AstNode;
import jinjava.de.odysseus.el.tree.impl.ast.AstUnary;

/**
 * Jinjava's expression parser with Jinja's grammar where the two differ:
 *
 * <ul>
 *   <li>{@code not} binds looser than comparisons and tests, so {@code not x is defined} is {@code
 *       not (x is defined)} and {@code not a == b} is {@code not (a == b)} (Jinjava reads {@code
 *       (not x) is defined});
 *   <li>a keyword argument's value is a whole expression, so {@code namespace(last=messages|length
 *       - 1)} passes {@code messages|length - 1} (Jinjava reads {@code (last=messages|length) -
 *       1});
 *   <li>{@code +} is Python's: a string only to a string, a list only to a list ({@code 'a' + none}
 *       fails as Jinja's {@code TypeError}, where Jinjava writes {@code anull});
 *   <li>a name before {@code else} is a name: {@code a if flag else f(x)} (Jinjava read {@code flag
 *       else f(x)} as the namespaced function {@code flag:f}, its {@code else} being EL's {@code
 *       :}).
 * </ul>
 */
final class JinjaParser extends ExtendedParser {

    JinjaParser(Builder context, String input) {
        super(context, input);
    }

    @Override
    protected AstNode eq(boolean required) throws Scanner.ScanException, Parser.ParseException {
        if (getToken().getSymbol() == Scanner.Symbol.NOT) {
            consumeToken();
            return createAstUnary(eq(true), AstUnary.NOT);
        }
        return super.eq(required);
    }

    @Override
    protected AstNode nonliteral() throws Scanner.ScanException, Parser.ParseException {
        if (getToken().getSymbol() == Scanner.Symbol.IDENTIFIER
                && lookahead(0).getSymbol() == Scanner.Symbol.COLON
                && "else".equals(lookahead(0).getImage())) {
            return identifier(consumeToken().getImage());
        }
        return super.nonliteral();
    }

    @Override
    protected AstNode add(boolean required) throws Scanner.ScanException, Parser.ParseException {
        AstNode v = mul(required);
        if (v == null) {
            return null;
        }
        while (true) {
            Scanner.Token token = getToken();
            if (token.getSymbol() == Scanner.Symbol.PLUS) {
                consumeToken();
                v = createAstBinary(v, mul(true), PythonAddition.OP);
            } else if (token.getSymbol() == Scanner.Symbol.MINUS) {
                consumeToken();
                v = createAstBinary(v, mul(true), AstBinary.SUB);
            } else if (token == NamedParameterOperator.TOKEN) {
                consumeToken();
                return NamedParameterOperator.HANDLER.createAstNode(v, expr(true));
            } else if (token.getSymbol() == Scanner.Symbol.EXTENSION
                    && getExtensionHandler(token).getExtensionPoint()
                            == Parser.ExtensionPoint.ADD) {
                v = getExtensionHandler(consumeToken()).createAstNode(v, mul(true));
            } else {
                return v;
            }
        }
    }

    /** The tree builder Jinjava's expression factory makes (by name) to parse with this parser. */
    public static final class JinjaSyntaxBuilder extends ExtendedSyntaxBuilder {

        private static final long serialVersionUID = 1L;

        /** Builds with no extra features, as the factory asks. */
        public JinjaSyntaxBuilder() {}

        /**
         * Builds with the factory's features (method calls, varargs).
         *
         * @param features the features
         */
        public JinjaSyntaxBuilder(Feature... features) {
            super(features);
        }

        @Override
        protected Parser createParser(String expression) {
            return new JinjaParser(this, expression);
        }
    }

    /** Python's {@code +}: numbers add, strings and lists concatenate with their own kind. */
    static final class PythonAddition extends AdditionOperator {

        static final PythonAddition OP = new PythonAddition();

        @Override
        protected Object apply(TypeConverter converter, Object o1, Object o2) {
            boolean text = o1 instanceof CharSequence || o2 instanceof CharSequence;
            boolean list = o1 instanceof Collection || o2 instanceof Collection;
            boolean map = o1 instanceof Map || o2 instanceof Map;
            boolean bothText = o1 instanceof CharSequence && o2 instanceof CharSequence;
            boolean bothLists = o1 instanceof Collection && o2 instanceof Collection;
            if (o1 == null || o2 == null || map || text && !bothText || list && !bothLists) {
                throw new TemplateFailure(
                        "TypeError: unsupported operand types for +: '"
                                + pythonType(o1)
                                + "' and '"
                                + pythonType(o2)
                                + "'");
            }
            return super.apply(converter, o1, o2);
        }

        private static String pythonType(Object value) {
            if (value == null) {
                return "NoneType";
            } else if (value instanceof CharSequence) {
                return "str";
            } else if (value instanceof Collection) {
                return "list";
            } else if (value instanceof Map) {
                return "dict";
            } else if (value instanceof Boolean) {
                return "bool";
            } else if (value instanceof Double || value instanceof Float) {
                return "float";
            } else if (value instanceof Number) {
                return "int";
            }
            return value.getClass().getSimpleName().toLowerCase(Locale.ROOT);
        }
    }
}
