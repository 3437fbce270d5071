package ai.djl.fsdp.dist;

import java.util.Map;
import java.util.Optional;

/** Typed access to a process environment, with errors that name the variable. */
final class EnvVariables {
    private final Map<String, String> values;

    EnvVariables(Map<String, String> values) {
        this.values = values;
    }

    boolean isSet(String name) {
        return text(name).isPresent();
    }

    Optional<String> text(String name) {
        String value = values.get(name);
        return value == null || value.isBlank() ? Optional.empty() : Optional.of(value.trim());
    }

    int requiredInt(String name, String because) {
        String value =
                text(name)
                        .orElseThrow(
                                () ->
                                        new IllegalArgumentException(
                                                name
                                                        + " is not set"
                                                        + (because.isEmpty()
                                                                ? ""
                                                                : " but " + because)));
        return parse(name, value);
    }

    int intOr(String name, int fallback) {
        return text(name).map(value -> parse(name, value)).orElse(fallback);
    }

    /**
     * Parses a whole number, naming the variable when it is not one.
     *
     * @throws IllegalArgumentException naming the variable and its value
     */
    static int parse(String name, String value) {
        try {
            return Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + "='" + value + "' is not a whole number", e);
        }
    }
}
