package ai.djl.fsdp.zoo.finetune.args;

import ai.djl.training.listener.TrainingListener;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * {@code --listeners}: the user's own DJL {@link TrainingListener}s, by class name, attached to the
 * run's trainer after the recipe's own, on every rank.
 */
public final class ListenerArguments {

    @Option(
            names = "--listeners",
            split = ",",
            paramLabel = "CLASS",
            description =
                    "DJL TrainingListener classes (public, with a public no-arg constructor) to"
                            + " attach to the trainer on every rank, comma-separated; put their"
                            + " jar on the ranks' class path with bin/fsdp launch --classpath.")
    public List<String> listeners = new ArrayList<>();

    /**
     * Creates one instance of each named listener, in order.
     *
     * @return the listeners
     * @throws IllegalArgumentException naming the class and the fix, for a class that is not on the
     *     class path, is not a {@link TrainingListener}, or has no public no-arg constructor
     */
    public List<TrainingListener> newListeners() {
        List<TrainingListener> created = new ArrayList<>();
        for (String name : listeners) {
            created.add(newListener(name.trim()));
        }
        return created;
    }

    private static TrainingListener newListener(String name) {
        Class<?> type;
        try {
            type = Class.forName(name, true, Thread.currentThread().getContextClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            throw invalid(
                    name,
                    "is not on the class path; add its jar or classes directory with bin/fsdp"
                            + " launch --classpath PATH -- finetune ...",
                    e);
        }
        if (!TrainingListener.class.isAssignableFrom(type)) {
            throw invalid(
                    name,
                    "is not an ai.djl.training.listener.TrainingListener; implement it (or extend"
                            + " TrainingListenerAdapter)",
                    null);
        }
        if (!Modifier.isPublic(type.getModifiers()) || Modifier.isAbstract(type.getModifiers())) {
            throw invalid(name, "is not a public concrete class; make it one", null);
        }
        try {
            return (TrainingListener) type.getConstructor().newInstance();
        } catch (NoSuchMethodException | IllegalAccessException e) {
            throw invalid(name, "has no public no-arg constructor; give it one", e);
        } catch (InvocationTargetException | InstantiationException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            throw invalid(
                    name,
                    "could not be created: its constructor threw " + cause + "; fix the class",
                    cause);
        }
    }

    private static IllegalArgumentException invalid(String name, String problem, Throwable cause) {
        return new IllegalArgumentException("--listeners " + name + " " + problem, cause);
    }
}
