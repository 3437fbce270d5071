package ai.djl.fsdp.bench.ops;

import ai.djl.engine.EngineException;
import ai.djl.pytorch.jni.JniUtils;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The operators the host called, read from a libtorch profiler trace (Chrome trace JSON): DJL's
 * profiler ({@link #record}) or {@code torch.profiler}'s {@code export_chrome_trace}, so that a run
 * of ours and one of PyTorch's count alike.
 *
 * <p>What counts is a top-level operator: an operator event ({@code "ph": "X"}, category {@code
 * cpu_op} or none) not inside another on its thread. That is one call the host made into libtorch's
 * dispatcher, or one node the autograd engine ran ({@code autograd::engine::evaluate_function:
 * AddmmBackward0}); the operators a call runs inside (an {@code aten::linear}'s {@code addmm}) are
 * its own cost. On a GPU, where the host issues kernels slower than the device runs them, these
 * calls bound the step.
 */
public final class OperatorTrace {

    /** The prefix the autograd engine gives the events of the backward nodes it runs. */
    private static final String AUTOGRAD_NODE = "autograd::engine::evaluate_function: ";

    private final Map<String, Integer> topLevelCounts;

    private OperatorTrace(Map<String, Integer> topLevelCounts) {
        this.topLevelCounts = topLevelCounts;
    }

    /**
     * Runs {@code body} under DJL's libtorch profiler (operators on the host, no device timing) and
     * writes the trace to {@code file}.
     *
     * @param file where the Chrome trace goes
     * @param body what to profile
     * @return the trace's operators
     * @throws IOException if the trace cannot be read back
     * @throws IllegalStateException if this libtorch build has no profiler
     */
    public static OperatorTrace record(Path file, Runnable body) throws IOException {
        try {
            JniUtils.startProfile(false, false, false);
        } catch (EngineException e) {
            throw new IllegalStateException(
                    "this libtorch build cannot profile operators ("
                            + e.getMessage()
                            + "): run without --op-profile",
                    e);
        }
        try {
            body.run();
        } finally {
            JniUtils.stopProfile(file.toAbsolutePath().toString());
        }
        return read(file);
    }

    /**
     * Reads a Chrome trace: a JSON array of events, or an object whose {@code traceEvents} holds
     * them.
     *
     * @param file the trace
     * @return its operators
     * @throws IOException if the file cannot be read or holds no trace
     */
    public static OperatorTrace read(Path file) throws IOException {
        JsonElement root;
        try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            root = JsonParser.parseReader(reader);
        } catch (JsonParseException e) {
            throw new IOException(file + " is not a JSON trace: " + e.getMessage(), e);
        }
        JsonArray events;
        if (root.isJsonArray()) {
            events = root.getAsJsonArray();
        } else if (root.isJsonObject() && root.getAsJsonObject().has("traceEvents")) {
            events = root.getAsJsonObject().getAsJsonArray("traceEvents");
        } else {
            throw new IOException(
                    file + " is not a Chrome trace: neither an event array nor traceEvents");
        }
        return of(operatorEvents(events));
    }

    /** A complete operator event: its thread, start and duration in microseconds, and name. */
    record Event(String thread, double start, double duration, String name) {}

    /**
     * Counts the top-level events of each thread by name.
     *
     * @param events operator events, in any order
     * @return the counts
     */
    static OperatorTrace of(List<Event> events) {
        Map<String, List<Event>> byThread = new HashMap<>();
        for (Event event : events) {
            byThread.computeIfAbsent(event.thread(), t -> new ArrayList<>()).add(event);
        }
        Map<String, Integer> counts = new TreeMap<>();
        // An enclosing event starts no later than what it holds, and lasts longer.
        Comparator<Event> order =
                Comparator.comparingDouble(Event::start)
                        .thenComparing(Comparator.comparingDouble(Event::duration).reversed());
        for (List<Event> thread : byThread.values()) {
            thread.sort(order);
            double end = Double.NEGATIVE_INFINITY;
            for (Event event : thread) {
                if (event.start() >= end) {
                    counts.merge(shortName(event.name()), 1, Integer::sum);
                    end = event.start() + event.duration();
                }
            }
        }
        return new OperatorTrace(Collections.unmodifiableMap(counts));
    }

    private static List<Event> operatorEvents(JsonArray events) {
        List<Event> operators = new ArrayList<>();
        for (JsonElement element : events) {
            if (!element.isJsonObject()) {
                continue;
            }
            JsonObject event = element.getAsJsonObject();
            // DJL's profiler names no category; torch.profiler's operators are cpu_op, beside
            // kernels, runtime calls and annotations.
            boolean operator = !event.has("cat") || "cpu_op".equals(event.get("cat").getAsString());
            if (operator
                    && event.has("ph")
                    && "X".equals(event.get("ph").getAsString())
                    && event.has("name")
                    && event.has("ts")
                    && event.has("dur")) {
                String thread =
                        (event.has("pid") ? event.get("pid").getAsString() : "")
                                + "/"
                                + (event.has("tid") ? event.get("tid").getAsString() : "");
                operators.add(
                        new Event(
                                thread,
                                event.get("ts").getAsDouble(),
                                event.get("dur").getAsDouble(),
                                event.get("name").getAsString()));
            }
        }
        return operators;
    }

    /** An autograd node's event as {@code backward:AddmmBackward0}, an operator's as is. */
    private static String shortName(String name) {
        return name.startsWith(AUTOGRAD_NODE)
                ? "backward:" + name.substring(AUTOGRAD_NODE.length())
                : name;
    }

    /**
     * Returns how often each top-level operator ran, by name; autograd nodes are named {@code
     * backward:<node>}.
     *
     * @return the counts, sorted by name
     */
    public Map<String, Integer> getTopLevelCounts() {
        return topLevelCounts;
    }

    /**
     * Returns the top-level operator calls in all.
     *
     * @return their number
     */
    public int getTopLevelTotal() {
        return topLevelCounts.values().stream().mapToInt(Integer::intValue).sum();
    }
}
