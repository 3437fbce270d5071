package ai.djl.fsdp.house;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAnyPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The house rules of the code base, checked on every build: no import loop between any two packages
 * of the project (the main classes of every module this one depends on are on its class path; the
 * Spark module, which nothing depends on, has one package and so no loop of its own), no source
 * file longer than a reader can hold (400 lines in the trainer module, 500 anywhere, every module),
 * no package of more than 25 files, and no package without a {@code package-info.java} saying what
 * it is for. The file checks walk the main sources of every module of the build; the stand-alone
 * projects under {@code examples/} are not part of it, but they and the benchmarks' example
 * programs may use only the API package and the job's process group. Internal packages stay in
 * their module, and the Spark module sees the project as any launcher would.
 */
class PackageStructureTest {

    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final int MAX_LINES = 500;
    private static final int MAX_TRAINER_LINES = 400;
    private static final int MAX_PACKAGE_FILES = 25;
    private static final String[] API_PACKAGES = {
        "ai.djl.fsdp.trainer", "ai.djl.fsdp.dist", "ai.djl.fsdp.examples.."
    };

    private static final Set<String> LAUNCHER_CONTRACT =
            Set.of(
                    "ai.djl.fsdp.spark",
                    "ai.djl.fsdp.trainer",
                    "ai.djl.fsdp.dist",
                    "ai.djl.fsdp.launch",
                    "ai.djl.fsdp.launch.rank",
                    "ai.djl.fsdp.cli");

    @Test
    void noImportLoopBetweenPackages() {
        JavaClasses classes =
                new ClassFileImporter()
                        .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                        .importPackages("ai.djl.fsdp");
        slices().matching("ai.djl.fsdp.(**)").should().beFreeOfCycles().check(classes);
    }

    @Test
    void noSourceFileTooLong() throws IOException {
        List<String> tooLong = new ArrayList<>();
        for (Path file : mainSources()) {
            long lines;
            try (Stream<String> text = Files.lines(file)) {
                lines = text.count();
            }
            int limit =
                    file.startsWith(ROOT.resolve("djl-fsdp-trainer"))
                            ? MAX_TRAINER_LINES
                            : MAX_LINES;
            if (lines > limit) {
                tooLong.add(
                        ROOT.relativize(file) + " has " + lines + " lines (at most " + limit + ")");
            }
        }
        assertTrue(tooLong.isEmpty(), "split these files by concept: " + tooLong);
    }

    @Test
    void noPackageTooLarge() throws IOException {
        Map<Path, Long> filesPerPackage =
                mainSources().stream()
                        .collect(
                                Collectors.groupingBy(
                                        Path::getParent, TreeMap::new, Collectors.counting()));
        List<String> tooLarge = new ArrayList<>();
        filesPerPackage.forEach(
                (dir, count) -> {
                    if (count > MAX_PACKAGE_FILES) {
                        tooLarge.add(ROOT.relativize(dir) + " has " + count + " files");
                    }
                });
        assertTrue(
                tooLarge.isEmpty(),
                "split these packages by job (at most "
                        + MAX_PACKAGE_FILES
                        + " files): "
                        + tooLarge);
    }

    @Test
    void everyPackageDocumented() throws IOException {
        List<String> undocumented =
                mainSources().stream()
                        .map(Path::getParent)
                        .distinct()
                        .filter(dir -> !Files.exists(dir.resolve("package-info.java")))
                        .map(dir -> ROOT.relativize(dir).toString())
                        .sorted()
                        .collect(Collectors.toList());
        assertTrue(
                undocumented.isEmpty(),
                "add a package-info.java saying what each package is for: " + undocumented);
    }

    /**
     * A DJL program's view of the project: the example programs (the benchmarks' {@code examples}
     * and {@code examples/resnet}) use the API package ({@code ai.djl.fsdp.trainer}) and the job's
     * process group ({@code ai.djl.fsdp.dist}), nothing else of the project.
     */
    @Test
    void examplesUseOnlyTheApiPackage() throws IOException {
        JavaClasses examples =
                new ClassFileImporter()
                        .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                        .importPackages("ai.djl.fsdp.examples");
        noClasses()
                .should()
                .dependOnClassesThat(
                        resideInAPackage("ai.djl.fsdp..")
                                .and(not(resideInAnyPackage(API_PACKAGES))))
                .check(examples);
        List<String> outside = new ArrayList<>();
        try (Stream<Path> files = Files.walk(ROOT.resolve("examples"))) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
                for (String line : Files.readAllLines(file)) {
                    if (line.startsWith("import ai.djl.fsdp.")
                            && !line.startsWith("import ai.djl.fsdp.trainer.")
                            && !line.startsWith("import ai.djl.fsdp.dist.")) {
                        outside.add(ROOT.relativize(file) + ": " + line);
                    }
                }
            }
        }
        assertTrue(outside.isEmpty(), "examples import past the API package: " + outside);
    }

    /**
     * A package under {@code ai.djl.fsdp.internal} is reached only from the module that holds it,
     * main code or tests: the trainer's passes over units, flat parameters and execution options
     * are seen by the model zoo, Spark and the example programs only through the trainer's API and
     * its libraries (LoRA, the optimizers, checkpoints, safetensors, state dicts, the wrap
     * planner). The JMH probes of the host cost ({@code bench.host}) are the one exception: they
     * time the internals themselves.
     */
    @Test
    void internalPackagesStayInTheirModule() throws IOException {
        List<String> outside = new ArrayList<>();
        for (Path file : sources(path -> true)) {
            Path relative = ROOT.relativize(file);
            if (relative.toString().contains("/ai/djl/fsdp/bench/host/")) {
                continue;
            }
            Path mainJava = ROOT.resolve(relative.getName(0)).resolve("src/main/java");
            for (String imported : projectImports(file)) {
                String pkg = packageOf(imported);
                if (pkg.startsWith("ai.djl.fsdp.internal.")
                        && !Files.isDirectory(mainJava.resolve(pkg.replace('.', '/')))) {
                    outside.add(relative + ": " + imported);
                }
            }
        }
        assertTrue(outside.isEmpty(), "use the API or the libraries instead: " + outside);
    }

    /**
     * Spark is a launcher from outside: its code and tests start ranks and read their results
     * through what any launcher may use, the API package, the job's process group, the launcher and
     * the contract of a rank's process ({@code launch}, {@code launch.rank}) and the {@code
     * bin/fsdp} entry point ({@code cli}).
     */
    @Test
    void sparkUsesOnlyTheLauncherContract() throws IOException {
        List<String> outside = new ArrayList<>();
        for (Path file : sources(path -> path.startsWith("djl-fsdp-spark"))) {
            for (String imported : projectImports(file)) {
                if (!LAUNCHER_CONTRACT.contains(packageOf(imported))) {
                    outside.add(ROOT.relativize(file) + ": " + imported);
                }
            }
        }
        assertTrue(outside.isEmpty(), "Spark imports past the launcher's contract: " + outside);
    }

    /** The Java files under {@code src/} of the modules whose root-relative path passes. */
    private static List<Path> sources(Predicate<Path> module) throws IOException {
        try (Stream<Path> files = Files.walk(ROOT)) {
            return files.filter(f -> f.toString().endsWith(".java"))
                    .filter(f -> ROOT.relativize(f).toString().contains("/src/"))
                    .filter(f -> module.test(ROOT.relativize(f)))
                    .toList();
        }
    }

    /** The project's classes a file imports, static imports by their class. */
    private static List<String> projectImports(Path file) throws IOException {
        List<String> imports = new ArrayList<>();
        for (String line : Files.readAllLines(file)) {
            String name = line.replaceFirst("^import (static )?", "").replace(";", "").trim();
            if (line.startsWith("import ") && name.startsWith("ai.djl.fsdp.")) {
                imports.add(name);
            }
        }
        return imports;
    }

    /** The package of an imported name: the segments before the first that starts upper case. */
    private static String packageOf(String imported) {
        List<String> segments = new ArrayList<>();
        for (String segment : imported.split("\\.")) {
            if (Character.isUpperCase(segment.charAt(0))) {
                break;
            }
            segments.add(segment);
        }
        return String.join(".", segments);
    }

    private static List<Path> mainSources() throws IOException {
        try (Stream<Path> files = Files.walk(ROOT)) {
            List<Path> sources =
                    files.filter(f -> f.toString().endsWith(".java"))
                            .filter(f -> ROOT.relativize(f).toString().contains("src/main/java/"))
                            .filter(f -> !ROOT.relativize(f).startsWith("examples"))
                            .collect(Collectors.toList());
            assertTrue(!sources.isEmpty(), "no sources under " + ROOT);
            return sources;
        }
    }
}
