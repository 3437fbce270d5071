package ai.djl.fsdp.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;
import org.apache.spark.launcher.JavaModuleOptions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code spark-submit --class ai.djl.fsdp.spark.FsdpSparkSubmit APP.jar --ranks 2 -- COMMAND}, as a
 * user runs it: Spark's own submit class ({@code org.apache.spark.deploy.SparkSubmit}, what the
 * {@code spark-submit} script runs) in a JVM of its own, on a {@code local-cluster} of two executor
 * JVMs, with the module's classes as the application jar.
 */
class SparkSubmitTest {

    /** Runs spark-submit; returns its exit code and output. */
    private static Result sparkSubmit(Path tmp, String... args) throws Exception {
        String home = System.getenv("SPARK_HOME");
        Assumptions.assumeTrue(
                home != null && !home.isBlank(),
                "SPARK_HOME is not set: run through Maven (the module's Surefire configuration sets"
                        + " it)");
        Files.createDirectories(Path.of(home, "jars"));
        String classPath = System.getProperty("java.class.path");
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(List.of(JavaModuleOptions.defaultModuleOptionArray()));
        command.addAll(List.of("-Xmx1g", "-cp", classPath, "org.apache.spark.deploy.SparkSubmit"));
        command.addAll(
                List.of(
                        "--master",
                        "local-cluster[2,1,1024]",
                        "--conf",
                        "spark.executor.extraClassPath=" + classPath,
                        "--conf",
                        "spark.ui.enabled=false",
                        "--conf",
                        "spark.driver.host=127.0.0.1",
                        "--conf",
                        "spark.stage.maxConsecutiveAttempts=1",
                        "--conf",
                        "spark.sql.warehouse.dir=" + tmp.resolve("warehouse"),
                        "--class",
                        FsdpSparkSubmit.class.getName(),
                        applicationJar(tmp).toString()));
        command.addAll(List.of(args));
        Path log = tmp.resolve("spark-submit.log");
        Process process =
                new ProcessBuilder(command)
                        .redirectErrorStream(true)
                        .redirectOutput(log.toFile())
                        .start();
        if (!process.waitFor(3, TimeUnit.MINUTES)) {
            process.destroyForcibly().waitFor();
            throw new AssertionError("spark-submit ran over 3 minutes: " + Files.readString(log));
        }
        return new Result(process.exitValue(), Files.readString(log));
    }

    /** The module's own classes as a jar, as {@code mvn package} builds it. */
    private static Path applicationJar(Path tmp) throws IOException {
        Path classes =
                Path.of(
                        FsdpSparkSubmit.class
                                .getProtectionDomain()
                                .getCodeSource()
                                .getLocation()
                                .getPath());
        Path jar = tmp.resolve("djl-fsdp-spark.jar");
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar));
                Stream<Path> files = Files.walk(classes)) {
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                out.putNextEntry(new JarEntry(classes.relativize(file).toString()));
                Files.copy(file, out);
                out.closeEntry();
            }
        }
        return jar;
    }

    @Test
    void runsTheRanksAndReportsAFailedRankInOneLine(@TempDir Path tmp) throws Exception {
        Path out = Files.createDirectory(tmp.resolve("out"));
        Result trained =
                sparkSubmit(tmp, "--ranks", "2", "--", MlpRun.class.getName(), out.toString(), "2");
        assertEquals(0, trained.code(), trained.output());
        assertEquals(2, Files.readAllLines(out.resolve("rank0")).size());
        assertEquals(2, Files.readAllLines(out.resolve("rank1")).size());

        Result failed = sparkSubmit(tmp, "--ranks", "2", "--", "finetune", "--max_steps", "1");
        assertEquals(1, failed.code(), failed.output());
        String line =
                failed.output()
                        .lines()
                        .filter(l -> l.startsWith("djl-fsdp-spark: "))
                        .findFirst()
                        .orElseThrow(() -> new AssertionError(failed.output()));
        System.out.println("spark-submit printed: " + line);
        assertTrue(
                line.contains("djl-fsdp rank ")
                        && line.contains("its JVM exited with code 2: fsdp finetune: Missing"),
                line);
    }

    private record Result(int code, String output) {}
}
