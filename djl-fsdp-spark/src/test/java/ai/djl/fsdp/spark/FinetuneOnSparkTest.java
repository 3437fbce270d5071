package ai.djl.fsdp.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.launch.Launcher;
import ai.djl.fsdp.trainer.CheckpointListener;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code finetune} on Spark ({@link FsdpSparkSubmit}, a JVM per rank) on a real two-executor
 * cluster: it writes what {@code bin/fsdp launch -- finetune} writes, and a run whose executor is
 * killed after a checkpoint is retried by Spark, resumes from that checkpoint and ends with the
 * uninterrupted run's losses.
 */
class FinetuneOnSparkTest {

    private static final Pattern LOSS = Pattern.compile("\"loss\"\\s*:\\s*([-0-9.eE]+)");

    private static TwoExecutorCluster cluster;

    @BeforeAll
    static void startCluster() throws Exception {
        cluster = TwoExecutorCluster.start();
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private static List<String> finetune(Path output, String... extra) {
        List<String> command =
                new ArrayList<>(
                        List.of(
                                "finetune",
                                "--output_dir",
                                output.toString(),
                                "--max_steps",
                                "8",
                                "--save_steps",
                                "2",
                                "--per_device_train_batch_size",
                                "4",
                                "--logging_steps",
                                "1",
                                "--eval_strategy",
                                "no",
                                "--exact_match_samples",
                                "0"));
        command.addAll(List.of(extra));
        return command;
    }

    private static int onSpark(List<String> finetune) {
        List<String> args = new ArrayList<>(List.of("--ranks", "2", "--timeout", "20", "--"));
        args.addAll(finetune);
        return FsdpSparkSubmit.run(cluster.session(), args.toArray(new String[0]));
    }

    private static List<String> losses(Path output) throws Exception {
        List<String> losses = new ArrayList<>();
        for (String line : Files.readAllLines(output.resolve("metrics.jsonl"))) {
            Matcher loss = LOSS.matcher(line);
            if (loss.find()) {
                losses.add(loss.group(1));
            }
        }
        return losses;
    }

    /** The standard output of this application's executors, where its ranks print. */
    private static String executorLogs() throws Exception {
        Path app =
                Path.of(
                        System.getenv("SPARK_HOME"),
                        "work",
                        cluster.session().sparkContext().applicationId());
        StringBuilder logs = new StringBuilder();
        try (Stream<Path> files = Files.walk(app)) {
            for (Path file : files.filter(f -> f.endsWith("stdout")).toList()) {
                logs.append(Files.readString(file));
            }
        }
        return logs.toString();
    }

    @Test
    void writesWhatBinFsdpLaunchWritesAndResumesARetriedStage(@TempDir Path tmp) throws Exception {
        Path launched = tmp.resolve("launch");
        Launcher.builder()
                .setNprocPerNode(2)
                .setCommand(finetune(launched))
                .optClassPath(System.getProperty("java.class.path"))
                .optThreadsPerRank(1)
                .build()
                .run();
        List<String> expected = losses(launched);
        assertEquals(8, expected.size(), expected.toString());

        Path spark = tmp.resolve("spark");
        assertEquals(0, onSpark(finetune(spark)));
        assertEquals(expected, losses(spark));
        assertArrayEquals(
                Files.readAllBytes(launched.resolve("model.safetensors")),
                Files.readAllBytes(spark.resolve("model.safetensors")),
                "the saved model");

        // Kill an executor (and with it its rank) once the run has saved a checkpoint.
        cluster.takeStageFailures();
        List<Long> executors =
                FsdpDistributor.builder(cluster.session())
                        .setRanks(2)
                        .build()
                        .run(rank -> ProcessHandle.current().pid());
        Path resumed = tmp.resolve("resumed");
        ExecutorService watcher = Executors.newSingleThreadExecutor();
        Future<?> killer =
                watcher.submit(
                        () -> {
                            while (CheckpointListener.newestCheckpoint(resumed).isEmpty()) {
                                Thread.sleep(20);
                            }
                            ProcessHandle.of(executors.get(1))
                                    .ifPresent(ProcessHandle::destroyForcibly);
                            return null;
                        });
        try {
            assertEquals(0, onSpark(finetune(resumed, "--resume_from_checkpoint")));
            killer.get(1, TimeUnit.SECONDS);
        } finally {
            watcher.shutdownNow();
        }
        List<String> failures = cluster.takeStageFailures();
        System.out.println("stage failures: " + failures);
        assertTrue(
                failures.stream().anyMatch(f -> f.contains("attempt 0")),
                "the first attempt failed: " + failures);
        String resumedFrom = "resumed from " + resumed.resolve("checkpoint-");
        assertTrue(executorLogs().contains(resumedFrom), "a rank printed '" + resumedFrom + "...'");
        assertEquals(expected, losses(resumed), "the retried stage resumed and ended alike");
    }
}
