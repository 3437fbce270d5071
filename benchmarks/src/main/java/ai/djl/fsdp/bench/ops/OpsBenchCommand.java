package ai.djl.fsdp.bench.ops;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.StringJoiner;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code bin/fsdp bench ops TRACE...}: the top-level operators of one or more profiler traces
 * ({@link OperatorTrace}), side by side: a row per operator name, a column per trace, the total
 * first. {@code bench train --op-profile} writes such a trace of one training step; so does the GPU
 * kit's {@code fsdp2_bench.py --op-profile} for PyTorch FSDP2.
 */
@Command(
        name = "ops",
        mixinStandardHelpOptions = true,
        description = {
            "Counts the operators the host called into libtorch in profiler traces (Chrome trace"
                    + " JSON: bench train --op-profile, or torch.profiler's), side by side."
        })
public final class OpsBenchCommand implements Callable<Integer> {

    @Spec private CommandSpec spec;

    @Parameters(arity = "1..*", paramLabel = "TRACE", description = "The traces.")
    private List<Path> traces;

    @Option(
            names = "--top",
            defaultValue = "40",
            description = "Operators shown, the most called first (default: ${DEFAULT-VALUE}).")
    private int top;

    @Override
    public Integer call() throws IOException {
        List<OperatorTrace> read = new ArrayList<>();
        for (Path trace : traces) {
            read.add(OperatorTrace.read(trace));
        }
        PrintWriter out = spec.commandLine().getOut();
        out.println(row("operator", traces, trace -> trace.getFileName().toString()));
        out.println(
                row(
                        "(all top-level operators)",
                        read,
                        trace -> Integer.toString(trace.getTopLevelTotal())));
        Set<String> names = new TreeSet<>();
        read.forEach(trace -> names.addAll(trace.getTopLevelCounts().keySet()));
        names.stream()
                .sorted(Comparator.comparingInt((String name) -> -mostCalls(read, name)))
                .limit(top)
                .forEach(
                        name ->
                                out.println(
                                        row(
                                                name,
                                                read,
                                                trace -> Integer.toString(calls(trace, name)))));
        out.flush();
        return 0;
    }

    /** A tab-separated line: the label, then one cell per column. */
    private static <T> String row(String label, List<T> columns, Function<T, String> cell) {
        StringJoiner line = new StringJoiner("\t").add(label);
        columns.forEach(column -> line.add(cell.apply(column)));
        return line.toString();
    }

    private static int calls(OperatorTrace trace, String name) {
        return trace.getTopLevelCounts().getOrDefault(name, 0);
    }

    private static int mostCalls(List<OperatorTrace> traces, String name) {
        return traces.stream().mapToInt(trace -> calls(trace, name)).max().orElse(0);
    }
}
