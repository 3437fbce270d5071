package ai.djl.fsdp.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What {@code bin/fsdp launch -- ...} runs: a subcommand, a main class or a jar. */
class UserProgramTest {

    private static final String OWN = System.getProperty("java.class.path");

    @Test
    void subcommandRunsThroughTheCli() {
        UserProgram program = UserProgram.of(List.of("bench", "train"), OWN);
        assertEquals(List.of(UserProgram.CLI_MAIN_CLASS, "bench", "train"), program.mainCommand());
        assertEquals(OWN, program.classPath());
    }

    @Test
    void mainClassIsLookedUpOnTheRanksClassPath(@TempDir Path directory) {
        String main = RankProbe.class.getName();
        assertEquals(List.of(main, "x"), UserProgram.of(List.of(main, "x"), OWN).mainCommand());
        // Only the class path the ranks get counts, not the launcher's own.
        IllegalArgumentException missing =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> UserProgram.of(List.of(main), directory.toString()));
        assertTrue(missing.getMessage().contains("--classpath"), missing.getMessage());
    }

    @Test
    void jarRunsItsMainClassAtTheHeadOfTheClassPath(@TempDir Path directory) throws Exception {
        Path app = jar(directory.resolve("app.jar"), RankProbe.class.getName());
        UserProgram program = UserProgram.of(List.of(app.toString(), "--epochs", "2"), OWN);
        assertEquals(List.of(RankProbe.class.getName(), "--epochs", "2"), program.mainCommand());
        assertEquals(app.toAbsolutePath() + File.pathSeparator + OWN, program.classPath());

        Path plain = jar(directory.resolve("plain.jar"), null);
        IllegalArgumentException noMain =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> UserProgram.of(List.of(plain.toString()), OWN));
        assertTrue(noMain.getMessage().contains("Main-Class"), noMain.getMessage());
        assertThrows(
                IllegalArgumentException.class,
                () -> UserProgram.of(List.of(directory.resolve("none.jar").toString()), OWN));
    }

    private static Path jar(Path file, String mainClass) throws Exception {
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        if (mainClass != null) {
            manifest.getMainAttributes().put(Attributes.Name.MAIN_CLASS, mainClass);
        }
        try (OutputStream out = Files.newOutputStream(file);
                JarOutputStream jar = new JarOutputStream(out, manifest)) {
            jar.flush();
        }
        return file;
    }
}
