package ai.djl.fsdp.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.cli.Fsdp;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** What the ranks of {@link FsdpDistributor#runMain} run; none of it needs a cluster. */
class CommandLineTest {

    @Test
    void aCommandWithoutADotRunsInBinFsdpAndAMainClassAsItIs() {
        assertEquals(
                List.of(Fsdp.class.getName(), "finetune", "--max_steps", "2"),
                FsdpDistributor.mainCommand(List.of("finetune", "--max_steps", "2")));
        assertEquals(
                List.of("com.example.Train", "3"),
                FsdpDistributor.mainCommand(List.of("com.example.Train", "3")));
    }

    @Test
    void aJarOrNothingIsRefusedSayingWhatToGive() {
        IllegalArgumentException jar =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> FsdpDistributor.mainCommand(List.of("app.jar")));
        assertTrue(jar.getMessage().contains("give the jar to spark-submit"), jar.getMessage());
        IllegalArgumentException none =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> FsdpDistributor.mainCommand(List.of()));
        assertTrue(none.getMessage().startsWith("no command for the ranks"), none.getMessage());
    }

    @Test
    void aFailedStageIsSummedUpWithoutStackTraces() {
        String reason =
                "Job aborted due to stage failure: ShuffleMapStage 3 (repartition at"
                    + " FsdpDistributor.java:192) has failed the maximum allowable number of times:"
                    + " 2. Most recent failure reason: Stage failed because barrier task"
                    + " ShuffleMapTask(3, 1) finished unsuccessfully.\n"
                    + "ai.djl.fsdp.spark.RankTaskFailedException: djl-fsdp rank 1 of 2 failed"
                    + " (stage attempt 1): the data ran out\n"
                    + "\tat ai.djl.fsdp.spark.BarrierTask.apply(BarrierTask.java:52)\n"
                    + "\tat scala.collection.Iterator$$anon$10.nextCur(Iterator.scala:594)\n";
        assertEquals(
                "Job aborted due to stage failure: ShuffleMapStage 3 (repartition at"
                    + " FsdpDistributor.java:192) has failed the maximum allowable number of times:"
                    + " 2. Most recent failure reason: Stage failed because barrier task"
                    + " ShuffleMapTask(3, 1) finished unsuccessfully."
                    + " ai.djl.fsdp.spark.RankTaskFailedException: djl-fsdp rank 1 of 2 failed"
                    + " (stage attempt 1): the data ran out",
                FsdpSparkSubmit.summary(new IllegalStateException(reason)));
    }

    @Test
    void aValueOutOfRangeExitsWithTheUsageCodeNamingItsFlag() {
        for (String[] bad :
                List.of(
                        new String[] {"--timeout", "0", "--ranks", "2"},
                        new String[] {"--timeout", "-5", "--ranks", "2"},
                        new String[] {"--timeout=0.0001", "--ranks", "2"},
                        new String[] {"--timeout", "NaN", "--ranks", "2"},
                        new String[] {"--ranks", "0"})) {
            StringWriter err = new StringWriter();
            // No session: the command line is refused before anything runs on a cluster.
            CommandLine commandLine = FsdpSparkSubmit.commandLine(null);
            commandLine.setErr(new PrintWriter(err, true));
            List<String> args = new ArrayList<>(List.of(bad));
            args.addAll(List.of("--", "finetune"));
            String line = String.join(" ", args);
            assertEquals(2, commandLine.execute(args.toArray(String[]::new)), line + ": " + err);
            String flag = bad[0].startsWith("--timeout") ? "--timeout " : "--ranks ";
            assertTrue(err.toString().startsWith(flag), line + ": " + err);
        }
    }

    /** The command a rank runs when rank 0 chose as it chooses now. */
    private static List<String> resolve(String... command) {
        ResumeFlag flag = ResumeFlag.of(FsdpDistributor.mainCommand(List.of(command)));
        return flag.command(flag.choose());
    }

    private static List<String> fsdp(String... command) {
        return FsdpDistributor.mainCommand(List.of(command));
    }

    @Test
    void aBareResumeFlagResumesFromTheNewestCompleteCheckpointOrStartsAfresh(@TempDir Path out)
            throws Exception {
        String dir = out.toString();
        List<String> fresh = fsdp("finetune", "--output_dir", dir);
        assertEquals(fresh, resolve("finetune", "--output_dir", dir, "--resume_from_checkpoint"));
        assertEquals(
                fresh,
                resolve("finetune", "--output_dir", dir, "--resume_from_checkpoint", "True"));
        assertEquals(
                fresh, resolve("finetune", "--output_dir", dir, "--resume_from_checkpoint=true"));

        Path complete = checkpoint(out, 4, true);
        checkpoint(out, 6, false); // being written: not complete
        List<String> resumed =
                fsdp(
                        "finetune",
                        "--output_dir",
                        dir,
                        "--resume_from_checkpoint",
                        complete.toString());
        assertEquals(resumed, resolve("finetune", "--output_dir", dir, "--resume_from_checkpoint"));
        assertEquals(
                resumed,
                resolve("finetune", "--output_dir", dir, "--resume_from_checkpoint", "TRUE"));
        for (String equals : List.of("True", "true", "TRUE")) {
            assertEquals(
                    fsdp(
                            "finetune",
                            "--output_dir=" + out,
                            "--resume_from_checkpoint",
                            complete.toString()),
                    resolve(
                            "finetune",
                            "--output_dir=" + out,
                            "--resume_from_checkpoint=" + equals),
                    equals);
        }
        // A named checkpoint, false, or no flag, is left alone.
        for (List<String> asGiven :
                List.of(
                        fsdp("finetune", "--resume_from_checkpoint", "/ckpt/checkpoint-2"),
                        fsdp("finetune", "--output_dir", dir, "--resume_from_checkpoint=false"),
                        fresh)) {
            assertEquals(
                    asGiven, resolve(asGiven.subList(1, asGiven.size()).toArray(String[]::new)));
        }
    }

    @Test
    void onlyFinetuneHasItsResumeFlagResolved(@TempDir Path out) throws Exception {
        Path complete = checkpoint(out, 4, true);
        List<String> train =
                List.of(
                        "com.example.Train",
                        "--output_dir",
                        out.toString(),
                        "--resume_from_checkpoint");
        assertEquals(train, resolve(train.toArray(String[]::new)));
        List<String> other =
                fsdp("bench", "--output_dir", out.toString(), "--resume_from_checkpoint");
        assertEquals(other, resolve(other.subList(1, other.size()).toArray(String[]::new)));
    }

    @Test
    void everyRankResumesFromTheCheckpointRankZeroChose(@TempDir Path tmp) throws Exception {
        Path out = Files.createDirectory(tmp.resolve("out dir"));
        Path chosen = checkpoint(out, 2, true);
        ResumeFlag flag =
                ResumeFlag.of(
                        fsdp(
                                "finetune",
                                "--output_dir",
                                out.toString(),
                                "--resume_from_checkpoint"));
        String offer = BarrierRendezvous.leaderOffer("driver", flag);

        // A later checkpoint completes while the other ranks start: they still resume from step 2.
        Path later = checkpoint(out, 4, true);
        String[] told = offer.split(" ", 4);
        assertEquals("driver", told[0]);
        assertEquals(chosen.toString(), told[3]);
        assertEquals(
                fsdp(
                        "finetune",
                        "--output_dir",
                        out.toString(),
                        "--resume_from_checkpoint",
                        chosen.toString()),
                flag.command(Optional.of(Path.of(told[3]))));
        assertEquals("", BarrierRendezvous.leaderOffer("driver", null).split(" ", 4)[3]);
    }

    /**
     * Writes a checkpoint as docs/checkpoints.md lays one out, {@code checkpoint-<step>}, complete
     * when its {@code COMPLETE} marker is there: the layout is the contract between a run and
     * whatever resumes it.
     */
    private static Path checkpoint(Path out, int step, boolean complete) throws IOException {
        Path directory = Files.createDirectories(out.resolve("checkpoint-" + step));
        if (complete) {
            Files.createFile(directory.resolve("COMPLETE"));
        }
        return directory;
    }
}
