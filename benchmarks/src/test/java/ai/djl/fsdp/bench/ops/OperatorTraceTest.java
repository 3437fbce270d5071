package ai.djl.fsdp.bench.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** Top-level operators, from a trace of DJL's profiler and from one in torch.profiler's form. */
class OperatorTraceTest {

    @TempDir Path dir;

    /** A trace as torch.profiler's export_chrome_trace writes it: an object, categories. */
    private static final String TORCH_PROFILER_TRACE =
            """
            {"traceEvents": [
              {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1,
               "ts": 10, "dur": 20},
              {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1,
               "ts": 12, "dur": 15},
              {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1,
               "ts": 30, "dur": 2},
              {"ph": "X", "cat": "user_annotation", "name": "FSDP::all_gather", "pid": 1,
               "tid": 1, "ts": 0, "dur": 100},
              {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 15,
               "dur": 5},
              {"ph": "X", "cat": "cpu_op",
               "name": "autograd::engine::evaluate_function: AddmmBackward0", "pid": 1, "tid": 2,
               "ts": 40, "dur": 10},
              {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 41,
               "dur": 3},
              {"ph": "i", "cat": "cpu_op", "name": "marker", "pid": 1, "tid": 1, "ts": 5}
            ]}
            """;

    @Test
    void countsOperatorsNotInsideAnotherOnTheirThread() throws IOException {
        Path file = dir.resolve("fsdp2.json");
        Files.writeString(file, TORCH_PROFILER_TRACE, StandardCharsets.UTF_8);
        OperatorTrace trace = OperatorTrace.read(file);
        // The annotation, the kernel and the instant event are not operators; addmm and mm run
        // inside linear and the backward node.
        assertEquals(
                Map.of("aten::linear", 1, "aten::add", 1, "backward:AddmmBackward0", 1),
                trace.getTopLevelCounts());
        assertEquals(3, trace.getTopLevelTotal());
    }

    @Test
    void recordsDjlOperatorsAndTheirBackward() throws IOException {
        Path file = dir.resolve("djl.json");
        OperatorTrace trace;
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            NDArray x = manager.ones(new Shape(4, 3));
            x.setRequiresGradient(true);
            trace =
                    OperatorTrace.record(
                            file,
                            () -> {
                                try (GradientCollector collector =
                                        Engine.getEngine("PyTorch").newGradientCollector()) {
                                    NDArray y = x.mul(x).sum();
                                    collector.backward(y);
                                }
                            });
        }
        Map<String, Integer> counts = trace.getTopLevelCounts();
        assertEquals(1, counts.get("aten::mul"), counts.toString());
        assertEquals(1, counts.get("aten::sum"), counts.toString());
        assertEquals(1, counts.get("backward:MulBackward0"), counts.toString());
        assertEquals(1, counts.get("backward:SumBackward0"), counts.toString());
        assertTrue(Files.size(file) > 0);
        // The file read back gives the same counts, and the command shows them side by side.
        assertEquals(counts, OperatorTrace.read(file).getTopLevelCounts());
        Path fsdp2 = dir.resolve("fsdp2.json");
        Files.writeString(fsdp2, TORCH_PROFILER_TRACE, StandardCharsets.UTF_8);
        CommandLine command = new CommandLine(new OpsBenchCommand());
        StringWriter out = new StringWriter();
        command.setOut(new PrintWriter(out));
        assertEquals(0, command.execute(file.toString(), fsdp2.toString()));
        String table = out.toString();
        assertTrue(table.startsWith("operator\tdjl.json\tfsdp2.json\n"), table);
        assertTrue(
                table.contains("(all top-level operators)\t" + trace.getTopLevelTotal() + "\t3\n"),
                table);
        assertTrue(table.contains("backward:AddmmBackward0\t0\t1\n"), table);
    }

    @Test
    void refusesAFileThatIsNoTrace() throws IOException {
        Path file = dir.resolve("config.json");
        Files.writeString(file, "{\"model_type\": \"gpt2\"}", StandardCharsets.UTF_8);
        IOException e = assertThrows(IOException.class, () -> OperatorTrace.read(file));
        assertTrue(e.getMessage().contains("not a Chrome trace"), e.getMessage());
        Files.writeString(file, "{oops", StandardCharsets.UTF_8);
        e = assertThrows(IOException.class, () -> OperatorTrace.read(file));
        assertTrue(e.getMessage().contains("not a JSON trace"), e.getMessage());
    }
}
