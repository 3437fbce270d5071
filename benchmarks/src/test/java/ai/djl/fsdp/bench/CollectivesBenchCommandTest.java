package ai.djl.fsdp.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.cli.Fsdp;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

/** Runs the benchmark end to end on two CPU ranks with a small buffer. */
class CollectivesBenchCommandTest {

    @Test
    @Timeout(300)
    void twoRanksReportEveryCollectiveInNcclTestsForm() {
        StringWriter out = new StringWriter();
        CommandLine fsdp = Fsdp.commandLine();
        fsdp.setOut(new PrintWriter(out, true));

        int code =
                fsdp.execute(
                        "bench",
                        "collectives",
                        "--nproc",
                        "2",
                        "--bytes",
                        "65536",
                        "--iters",
                        "2",
                        "--warmup",
                        "1",
                        "--jvm-opt=-Xmx256m");

        assertEquals(0, code, out.toString());
        List<String> lines = out.toString().lines().toList();
        assertEquals(3, lines.size(), out.toString());
        String number = "\\d+\\.\\d{3}";
        for (int i = 0; i < 3; i++) {
            String op = Collective.values()[i].label();
            assertTrue(
                    lines.get(i)
                            .matches(
                                    "op="
                                            + op
                                            + " bytes=65536 time_ms="
                                            + number
                                            + " algbw_GBps="
                                            + number
                                            + " busbw_GBps="
                                            + number),
                    lines.get(i));
        }
    }

    @Test
    void bytesThatDoNotSplitOverTheRanksAreRejected() {
        StringWriter err = new StringWriter();
        CommandLine fsdp = Fsdp.commandLine();
        fsdp.setErr(new PrintWriter(err, true));

        int code = fsdp.execute("bench", "collectives", "--nproc", "2", "--bytes", "6");

        assertEquals(Fsdp.EXIT_FAILURE, code);
        assertTrue(err.toString().contains("--bytes"), err.toString());
    }
}
