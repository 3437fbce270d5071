package ai.djl.fsdp.util;

import java.util.List;

/**
 * Steps that must all run even when some fail, such as closing each of several resources: the first
 * failure is thrown once every step has run, the later ones suppressed onto it.
 */
public final class Failures {

    private Failures() {}

    /**
     * An action on one item that may throw {@code E}.
     *
     * @param <T> the item's type
     * @param <E> the checked exception it may throw ({@link RuntimeException} for none)
     */
    @FunctionalInterface
    public interface Action<T, E extends Exception> {

        /**
         * Acts on {@code item}.
         *
         * @param item the item
         * @throws E if the action fails
         */
        void accept(T item) throws E;
    }

    /**
     * Returns the failure to throw after {@code later}: {@code first}, with {@code later}
     * suppressed onto it, or {@code later} if there was none before.
     *
     * @param first the failure so far, or null
     * @param later the new failure
     * @param <T> the failures' type
     * @return the failure to throw
     */
    public static <T extends Throwable> T suppress(T first, T later) {
        if (first == null) {
            return later;
        }
        first.addSuppressed(later);
        return first;
    }

    /**
     * Runs {@code action} on every item, in order, even after some fail; then throws the first
     * failure, with the later ones suppressed onto it.
     *
     * @param items the items, such as resources to close
     * @param action what to do with each, such as closing it
     * @param <T> the items' type
     * @param <E> the checked exception the action may throw
     * @throws E the first failure
     */
    @SuppressWarnings("unchecked")
    public static <T, E extends Exception> void forEach(
            Iterable<? extends T> items, Action<? super T, E> action) throws E {
        Exception failure = null;
        for (T item : items) {
            try {
                action.accept(item);
            } catch (Exception e) { // a RuntimeException or, by the action's signature, an E
                failure = suppress(failure, e);
            }
        }
        if (failure instanceof RuntimeException) {
            throw (RuntimeException) failure;
        }
        if (failure != null) {
            throw (E) failure;
        }
    }

    /**
     * Runs {@code action} on every item, in order, after {@code failure} stopped the caller (to
     * wait for work still in flight before its buffers are freed, say), adding what each throws to
     * {@code failure} as suppressed; throws nothing itself.
     *
     * @param failure the failure the caller throws next
     * @param items the items, such as collectives in flight
     * @param action what to do with each, such as waiting for it
     * @param <T> the items' type
     */
    public static <T> void forEachAfter(
            Throwable failure, Iterable<? extends T> items, Action<? super T, ?> action) {
        for (T item : items) {
            try {
                action.accept(item);
            } catch (Exception | Error e) {
                failure.addSuppressed(e);
            }
        }
    }

    /**
     * Runs every step, in order, even after some fail; then throws the first failure, with the
     * later ones suppressed onto it.
     *
     * @param steps the steps
     */
    public static void runAll(Runnable... steps) {
        forEach(List.of(steps), Runnable::run);
    }
}
