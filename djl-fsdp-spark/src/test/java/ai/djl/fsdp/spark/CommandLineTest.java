package ai.djl.fsdp.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import ai.djl.fsdp.cli.Fsdp;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

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
                    + "ai.djl.fsdp.spark.RankFailedException: djl-fsdp rank 1 of 2 failed (stage"
                    + " attempt 1): the data ran out\n"
                    + "\tat ai.djl.fsdp.spark.BarrierTask.apply(BarrierTask.java:52)\n"
                    + "\tat scala.collection.Iterator$$anon$10.nextCur(Iterator.scala:594)\n";
        assertEquals(
                "Job aborted due to stage failure: ShuffleMapStage 3 (repartition at"
                    + " FsdpDistributor.java:192) has failed the maximum allowable number of times:"
                    + " 2. Most recent failure reason: Stage failed because barrier task"
                    + " ShuffleMapTask(3, 1) finished unsuccessfully."
                    + " ai.djl.fsdp.spark.RankFailedException: djl-fsdp rank 1 of 2 failed (stage"
                    + " attempt 1): the data ran out",
                FsdpSparkSubmit.summary(new IllegalStateException(reason)));
    }

    @Test
    void aBareResumeFlagResumesFromTheNewestCompleteCheckpointOrStartsAfresh(@TempDir Path out)
            throws Exception {
        List<String> bare =
                List.of("finetune", "--output_dir", out.toString(), "--resume_from_checkpoint");
        List<String> fresh = List.of("finetune", "--output_dir", out.toString());
        assertEquals(fresh, ResumeFlag.resolve(bare));
        assertEquals(
                fresh,
                ResumeFlag.resolve(
                        List.of(
                                "finetune",
                                "--output_dir",
                                out.toString(),
                                "--resume_from_checkpoint",
                                "True")));

        Path complete = Files.createDirectories(CheckpointDirectory.of(out, 4));
        Files.createFile(complete.resolve(CheckpointDirectory.COMPLETE));
        Files.createDirectories(CheckpointDirectory.of(out, 6)); // being written: not complete
        List<String> resumed =
                List.of(
                        "finetune",
                        "--output_dir",
                        out.toString(),
                        "--resume_from_checkpoint",
                        complete.toString());
        assertEquals(resumed, ResumeFlag.resolve(bare));
        assertEquals(
                List.of(
                        "finetune",
                        "--output_dir=" + out,
                        "--resume_from_checkpoint",
                        complete.toString()),
                ResumeFlag.resolve(
                        List.of(
                                "finetune",
                                "--output_dir=" + out,
                                "--resume_from_checkpoint=True")));
        // A named checkpoint, or no flag, is left alone.
        List<String> named = List.of("finetune", "--resume_from_checkpoint", "/ckpt/checkpoint-2");
        assertEquals(named, ResumeFlag.resolve(named));
        assertEquals(fresh, ResumeFlag.resolve(fresh));
    }
}
