package ai.djl.fsdp.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.cli.Fsdp;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

/** Runs the benchmark end to end on CPU ranks with a small buffer. */
class CollectivesBenchCommandTest {

    @Test
    @Timeout(300)
    void twoRanksReportEveryCollectiveInNcclTestsForm() {
        List<String> lines = smallRun("--nproc", "2");
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

    /**
     * Four ranks as 2 shard groups of 2: gathers and reduce-scatters inside a shard group, the
     * all-reduce of a half-size shard across a replicate group, each with what one rank sends.
     */
    @Test
    @Timeout(300)
    void hybridLayoutTimesEachCollectiveInItsGroupWithBytesInsideAndAcross() {
        List<String> lines = smallRun("--nproc", "4", "--shard-group-size", "2");
        String timing = " time_ms=[\\d.]+ algbw_GBps=[\\d.]+ busbw_GBps=[\\d.]+";
        // A ring of 2 sends half the buffer in a gather or a reduce-scatter, all of it in an
        // all-reduce; the all-reduce runs on the shard, half of the 65536 bytes.
        String[] expected = {
            "op=all_gather bytes=65536"
                    + timing
                    + " group=shard ranks=2 sent_inside_mb=0.033 sent_across_mb=0.000",
            "op=reduce_scatter bytes=65536"
                    + timing
                    + " group=shard ranks=2 sent_inside_mb=0.033 sent_across_mb=0.000",
            "op=all_reduce bytes=32768"
                    + timing
                    + " group=replicate ranks=2 sent_inside_mb=0.000 sent_across_mb=0.033"
        };
        for (int i = 0; i < 3; i++) {
            assertTrue(lines.get(i).matches(expected[i]), lines.get(i));
        }
    }

    /** Runs the benchmark on 64 KiB, 2 timed runs after 1, and returns its 3 lines. */
    private static List<String> smallRun(String... ranks) {
        StringWriter out = new StringWriter();
        CommandLine fsdp = Fsdp.commandLine();
        fsdp.setOut(new PrintWriter(out, true));
        List<String> args = new ArrayList<>(List.of("bench", "collectives"));
        args.addAll(List.of(ranks));
        args.addAll(
                List.of("--bytes", "65536", "--iters", "2", "--warmup", "1", "--jvm-opt=-Xmx256m"));

        int code = fsdp.execute(args.toArray(String[]::new));

        assertEquals(0, code, out.toString());
        List<String> lines = out.toString().lines().toList();
        assertEquals(3, lines.size(), out.toString());
        return lines;
    }

    @Test
    void aShardGroupSizeThatDoesNotDivideTheRanksIsRejected() {
        StringWriter err = new StringWriter();
        CommandLine fsdp = Fsdp.commandLine();
        fsdp.setErr(new PrintWriter(err, true));

        int code = fsdp.execute("bench", "collectives", "--nproc", "4", "--shard-group-size", "3");

        assertEquals(Fsdp.EXIT_FAILURE, code);
        assertTrue(err.toString().contains("--shard-group-size must divide"), err.toString());
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
