package ai.djl.fsdp.zoo.hf;

import com.google.gson.JsonElement;
import com.google.gson.JsonPrimitive;
import java.math.BigDecimal;

/**
 * Checks the values of {@code config.json} against the Java types they bind to, so that a wrong
 * value is one error naming its key and what it must be, instead of a parser exception or a number
 * silently wrapped to fit an int.
 */
final class ConfigValues {

    /** Longer numbers are not parsed: none of a configuration's values needs that many digits. */
    private static final int MAX_DIGITS = 40;

    private ConfigValues() {}

    /**
     * Checks a value for a field of a type.
     *
     * @param key the JSON key, for the message
     * @param value the value, not JSON null
     * @param type the field's type
     * @throws IllegalArgumentException naming the key if the value does not fit the type
     */
    static void check(String key, JsonElement value, Class<?> type) {
        if (type == int.class || type == Integer.class) {
            BigDecimal number = number(value);
            if (!isInteger(number)
                    || number.signum() <= 0
                    || number.compareTo(BigDecimal.valueOf(Integer.MAX_VALUE)) > 0) {
                throw wrong(key, value, "a positive integer (at most " + Integer.MAX_VALUE + ")");
            }
        } else if (type == long.class || type == Long.class) {
            BigDecimal number = number(value);
            if (!isInteger(number)
                    || number.signum() < 0
                    || number.compareTo(BigDecimal.valueOf(Long.MAX_VALUE)) > 0) {
                throw wrong(key, value, "a non-negative integer");
            }
        } else if (type == float.class || type == double.class) {
            BigDecimal number = number(value);
            double d = number == null ? Double.NaN : number.doubleValue();
            if (!Double.isFinite(type == float.class ? (float) d : d)) {
                throw wrong(key, value, "a finite number");
            }
        } else if (type == boolean.class || type == Boolean.class) {
            if (!(value instanceof JsonPrimitive p && p.isBoolean())) {
                throw wrong(key, value, "true or false");
            }
        } else if (type == String.class) {
            if (!(value instanceof JsonPrimitive p && p.isString())) {
                throw wrong(key, value, "a string");
            }
        }
    }

    /**
     * Reads a token id.
     *
     * @param value an element of {@code eos_token_id}
     * @return the id
     * @throws IllegalArgumentException if it is not a non-negative integer
     */
    static long tokenId(JsonElement value) {
        check("eos_token_id", value, long.class);
        return value.getAsBigDecimal().longValueExact();
    }

    /** The value as an exact number, or null if it is not a JSON number. */
    private static BigDecimal number(JsonElement value) {
        if (!(value instanceof JsonPrimitive p && p.isNumber())
                || value.getAsString().length() > MAX_DIGITS) {
            return null;
        }
        try {
            return new BigDecimal(value.getAsString());
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static boolean isInteger(BigDecimal number) {
        // The digit count is checked first: 1e999999999 must not be expanded.
        return number != null
                && (long) number.precision() - number.scale() <= 20
                && number.stripTrailingZeros().scale() <= 0;
    }

    private static IllegalArgumentException wrong(String key, JsonElement value, String expected) {
        return new IllegalArgumentException(
                "\"" + key + "\" must be " + expected + ", got " + value);
    }
}
