package ai.djl.fsdp.launch;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.jar.Manifest;
import java.util.stream.Stream;

/**
 * What a rank runs, as a launch command names it, and the class path it runs on: a {@code bin/fsdp}
 * subcommand (a first word without a dot), a main class, or a jar ({@code app.jar}) whose manifest
 * names its {@code Main-Class}. The user's class path goes before the launcher's own, so the
 * program's classes and its dependencies, the project's modules included, come first; the jar is
 * put at its head. The main class is looked up before any rank starts.
 *
 * @param classPath the ranks' class path
 * @param mainCommand the main class, then its arguments
 */
record UserProgram(String classPath, List<String> mainCommand) {

    /** The class that runs a {@code bin/fsdp} subcommand given by name. */
    static final String CLI_MAIN_CLASS = "ai.djl.fsdp.cli.Fsdp";

    /**
     * Resolves a launch command.
     *
     * @param command the subcommand, main class or jar, then its arguments
     * @param classPath the class path the ranks get, the user's entries first
     * @return the program
     * @throws IllegalArgumentException if the jar has no {@code Main-Class} or the main class is
     *     not on the class path
     */
    static UserProgram of(List<String> command, String classPath) {
        String first = command.get(0);
        List<String> rest = command.subList(1, command.size());
        if (first.endsWith(".jar")) {
            String jar = Path.of(first).toAbsolutePath().toString();
            List<String> main = new ArrayList<>();
            main.add(mainClassOf(Path.of(jar)));
            main.addAll(rest);
            return of(main, jar + File.pathSeparator + classPath);
        }
        if (!first.contains(".")) {
            List<String> cli = new ArrayList<>(command.size() + 1);
            cli.add(CLI_MAIN_CLASS);
            cli.addAll(command);
            return new UserProgram(classPath, cli);
        }
        try (URLClassLoader loader =
                new URLClassLoader(urls(classPath), ClassLoader.getPlatformClassLoader())) {
            Class.forName(first, false, loader);
        } catch (ClassNotFoundException | LinkageError e) {
            throw new IllegalArgumentException(
                    "No class "
                            + first
                            + " on the class path. Give a fully qualified main class, or a"
                            + " bin/fsdp command name (no dot); put the program's classes on the"
                            + " ranks' class path with --classpath (or CLASSPATH), or launch its"
                            + " jar (-- app.jar ARGS).",
                    e);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new UserProgram(classPath, List.copyOf(command));
    }

    /** Returns the {@code Main-Class} of a jar's manifest. */
    private static String mainClassOf(Path jar) {
        if (!Files.isRegularFile(jar)) {
            throw new IllegalArgumentException(
                    "No jar " + jar + ": give the path of an existing jar file");
        }
        try (JarFile file = new JarFile(jar.toFile())) {
            Manifest manifest = file.getManifest();
            String main =
                    manifest == null
                            ? null
                            : manifest.getMainAttributes().getValue(Attributes.Name.MAIN_CLASS);
            if (main == null || main.isBlank()) {
                throw new IllegalArgumentException(
                        jar
                                + " names no Main-Class in its manifest: build it with one (Maven's"
                                + " jar plugin, <mainClass>), or give the main class with"
                                + " --classpath "
                                + jar
                                + " -- MAIN_CLASS ARGS");
            }
            return main.trim();
        } catch (IOException e) {
            throw new IllegalArgumentException(
                    jar + " is not a readable jar: " + e.getMessage(), e);
        }
    }

    /** The class path's entries as {@code java -cp} reads them ({@code dir/*}: its jars). */
    private static URL[] urls(String classPath) throws IOException {
        List<URL> urls = new ArrayList<>();
        for (String entry : classPath.split(File.pathSeparator)) {
            if (entry.isEmpty()) {
                continue;
            }
            if (entry.endsWith("*")) {
                Path directory = Path.of(entry.substring(0, entry.length() - 1));
                if (Files.isDirectory(directory)) {
                    try (Stream<Path> files = Files.list(directory)) {
                        for (Path jar : files.filter(f -> f.toString().endsWith(".jar")).toList()) {
                            urls.add(url(jar));
                        }
                    }
                }
            } else {
                urls.add(url(Path.of(entry)));
            }
        }
        return urls.toArray(URL[]::new);
    }

    private static URL url(Path path) throws MalformedURLException {
        return path.toAbsolutePath().toUri().toURL();
    }
}
