package ai.djl.fsdp.checkpoint;

import ai.djl.nn.Parameter;
import java.util.List;

/**
 * An FSDP unit while its parameters, and only its, hold their full arrays: what a model's state is
 * read from or written to, one unit at a time.
 */
public final class GatheredUnit {

    private final String name;
    private final List<Parameter> parameters;

    /**
     * Creates the view of one unit.
     *
     * @param name the unit's dotted path, {@code root} for the root
     * @param parameters its parameters, each holding its full array
     */
    public GatheredUnit(String name, List<Parameter> parameters) {
        this.name = name;
        this.parameters = List.copyOf(parameters);
    }

    /** Returns the unit's dotted path, {@code root} for the root. */
    public String getName() {
        return name;
    }

    /** Returns the unit's parameters; each holds a copy of its full array. */
    public List<Parameter> getParameters() {
        return parameters;
    }
}
