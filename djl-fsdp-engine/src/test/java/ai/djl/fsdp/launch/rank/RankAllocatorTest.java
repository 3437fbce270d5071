package ai.djl.fsdp.launch.rank;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Which allocator a rank preloads, from the variable and what the machine has installed. */
class RankAllocatorTest {

    @TempDir Path lib;
    @TempDir Path empty;

    private Path install(String name) throws IOException {
        return Files.writeString(lib.resolve(name), "not really a library");
    }

    private RankAllocator choose(Map<String, String> environment) {
        return RankAllocator.choose(environment, List.of(empty, lib));
    }

    @Test
    void glibcIsTheDefaultEvenWhereTcmallocIsInstalled() throws IOException {
        install("libtcmalloc_minimal.so.4");

        for (Map<String, String> environment :
                List.of(Map.<String, String>of(), Map.of(RankAllocator.VARIABLE, "glibc"))) {
            RankAllocator chosen = choose(environment);
            assertNull(chosen.preload());
            assertNull(chosen.note());
            assertEquals(Map.of(), chosen.variables(Map.of()));
        }
    }

    @Test
    void tcmallocByNameIsPreloadedTheMinimalBuildFirst() throws IOException {
        install("libtcmalloc.so.4");
        Path minimal = install("libtcmalloc_minimal.so.4");

        RankAllocator chosen = choose(Map.of(RankAllocator.VARIABLE, "tcmalloc"));

        assertEquals(minimal, chosen.preload());
        assertTrue(chosen.note().contains("libtcmalloc_minimal.so.4"), chosen.note());
        Map<String, String> variables = chosen.variables(Map.of());
        assertEquals(minimal.toString(), variables.get("LD_PRELOAD"));
        assertEquals(
                Long.toString(1L << 40), variables.get(RankAllocator.LARGE_ALLOC_REPORT_VARIABLE));
    }

    @Test
    void otherPreloadedLibrariesStayAfterTheAllocatorAndSettingsAreKept() throws IOException {
        Path minimal = install("libtcmalloc_minimal.so.4");
        Map<String, String> inherited =
                Map.of(
                        RankAllocator.VARIABLE,
                        "tcmalloc",
                        "LD_PRELOAD",
                        "/opt/lib/libtrace.so",
                        RankAllocator.LARGE_ALLOC_REPORT_VARIABLE,
                        "1073741824");

        Map<String, String> variables = choose(inherited).variables(inherited);

        assertEquals(Map.of("LD_PRELOAD", minimal + ":/opt/lib/libtrace.so"), variables);
        Map<String, String> handedDown =
                Map.of(
                        "LD_PRELOAD",
                        minimal + ":/opt/lib/libtrace.so",
                        RankAllocator.LARGE_ALLOC_REPORT_VARIABLE,
                        "1073741824");
        assertEquals(Map.of(), choose(inherited).variables(handedDown));
    }

    @Test
    void tcmallocByNameWhereItIsMissingSaysHowToInstallItOrWhatElseToChoose() {
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> choose(Map.of(RankAllocator.VARIABLE, "TCMalloc")));

        assertTrue(e.getMessage().contains("apt-get install libtcmalloc-minimal4"), e.getMessage());
        assertTrue(e.getMessage().contains("--allocator glibc"), e.getMessage());
        assertTrue(e.getMessage().contains("unset " + RankAllocator.VARIABLE), e.getMessage());
        assertTrue(e.getMessage().contains(lib.toString()), e.getMessage());
    }

    @Test
    void aLibraryIsPreloadedByPathAndAMissingOneIsRefused() throws IOException {
        Path jemalloc = install("libjemalloc.so.2");

        RankAllocator chosen = choose(Map.of(RankAllocator.VARIABLE, jemalloc.toString()));

        assertEquals(jemalloc, chosen.preload());
        assertEquals(Map.of("LD_PRELOAD", jemalloc.toString()), chosen.variables(Map.of()));
        Path missing = lib.resolve("libmimalloc.so");
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> choose(Map.of(RankAllocator.VARIABLE, missing.toString())));
        assertTrue(e.getMessage().contains(missing.toString()), e.getMessage());
        assertTrue(
                e.getMessage().contains("glibc, tcmalloc, jemalloc or the path"), e.getMessage());
    }

    @Test
    void jemallocByNameIsPreloadedAndWhereItIsMissingSaysHowToInstallIt() throws IOException {
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> choose(Map.of(RankAllocator.VARIABLE, "jemalloc")));
        assertTrue(e.getMessage().contains("apt-get install libjemalloc2"), e.getMessage());
        assertTrue(e.getMessage().contains("--allocator glibc"), e.getMessage());

        Path jemalloc = install("libjemalloc.so.2");
        RankAllocator chosen = choose(Map.of(RankAllocator.VARIABLE, "JEMalloc"));

        assertEquals(jemalloc, chosen.preload());
        // Only tcmalloc needs its large-allocation report silenced.
        assertEquals(Map.of("LD_PRELOAD", jemalloc.toString()), chosen.variables(Map.of()));
        assertTrue(chosen.note().contains("libjemalloc.so.2"), chosen.note());
    }
}
