package ai.djl.fsdp.launch.rank;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The memory allocator a rank's JVM runs with: glibc's malloc (with {@link
 * RankCommand#MALLOC_TUNABLES}) unless tcmalloc or another allocator is asked for, preloaded.
 *
 * <p>A training step allocates and frees thousands of tensors. On the host-bound shape of
 * docs/benchmarks.md glibc's malloc and free take a sixth of the step, and tcmalloc makes steps
 * 1.14x-1.37x faster (PyTorch's own CPU launcher, {@code torch.backends.xeon.run_cpu}, preloads it
 * for that reason). It also keeps what it once held: a LoRA fine-tune of a 2.8-billion-parameter
 * Llama peaked 12% higher per rank with it, its initialization's high-water mark never handed back,
 * so glibc, which returns every freed buffer of 4 MiB or more, stays the default. jemalloc goes the
 * other way: glibc's arenas keep the smaller arrays a step frees (activations of 256 KiB to 4 MiB),
 * which jemalloc hands back, so a Flan-T5-large LoRA with offload peaked 0.15-0.2 GB lower per rank
 * with it (1.25x of its ideal, not about 1.35x) at 1.14x the step time (docs/scale.md).
 *
 * <p>Chosen by {@value #VARIABLE} ({@code bin/fsdp launch --allocator}): {@code glibc} (the
 * default), {@code tcmalloc} or {@code jemalloc} (an error that says how to install it where it is
 * not), or the path of an allocator library to preload (mimalloc, a build of one's own).
 *
 * @param preload the library each rank preloads, as an absolute path, or null for glibc's malloc
 */
public record RankAllocator(Path preload) {

    /** The variable that chooses the allocator. */
    public static final String VARIABLE = "FSDP_ALLOCATOR";

    /** The libraries searched for tcmalloc, the minimal build first. */
    static final List<String> TCMALLOC_NAMES =
            List.of("libtcmalloc_minimal.so.4", "libtcmalloc.so.4");

    /** The libraries searched for jemalloc. */
    static final List<String> JEMALLOC_NAMES = List.of("libjemalloc.so.2", "libjemalloc.so");

    /** tcmalloc reports every allocation from 1 GiB on to stderr unless told a higher limit. */
    static final String LARGE_ALLOC_REPORT_VARIABLE = "TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD";

    private static final String TCMALLOC_INSTALL =
            "Debian and Ubuntu: apt-get install libtcmalloc-minimal4; RHEL: dnf install"
                    + " gperftools-libs";

    private static final String JEMALLOC_INSTALL =
            "Debian and Ubuntu: apt-get install libjemalloc2; RHEL: dnf install jemalloc (EPEL)";

    /**
     * Decides the allocator of the ranks this process starts.
     *
     * @param environment the environment the ranks inherit ({@value #VARIABLE})
     * @param libraryDirectories where to look for tcmalloc and jemalloc
     * @return the allocator
     * @throws IllegalArgumentException if the choice names an allocator that is not there
     */
    public static RankAllocator choose(
            Map<String, String> environment, List<Path> libraryDirectories) {
        String choice = environment.getOrDefault(VARIABLE, "").trim();
        switch (choice.toLowerCase(Locale.ROOT)) {
            case "":
            case "glibc":
                return new RankAllocator(null);
            case "tcmalloc":
                return installed(choice, TCMALLOC_NAMES, TCMALLOC_INSTALL, libraryDirectories);
            case "jemalloc":
                return installed(choice, JEMALLOC_NAMES, JEMALLOC_INSTALL, libraryDirectories);
            default:
                Path library = Path.of(choice);
                if (!Files.isRegularFile(library)) {
                    throw new IllegalArgumentException(
                            named(choice)
                                    + "no such library; give glibc, tcmalloc, jemalloc or the path"
                                    + " of an allocator's shared library");
                }
                return new RankAllocator(library.toAbsolutePath());
        }
    }

    /**
     * Decides the allocator of the ranks this process starts, looking for tcmalloc and jemalloc
     * where Linux distributions install libraries.
     *
     * @param environment the environment the ranks inherit
     * @return the allocator
     * @throws IllegalArgumentException if the choice names an allocator that is not there
     */
    public static RankAllocator choose(Map<String, String> environment) {
        String arch = System.getProperty("os.arch");
        String machine = "amd64".equals(arch) ? "x86_64" : arch;
        return choose(
                environment,
                List.of(
                        Path.of("/usr/lib/" + machine + "-linux-gnu"),
                        Path.of("/usr/lib64"),
                        Path.of("/usr/lib"),
                        Path.of("/usr/local/lib")));
    }

    /** Returns one line saying what the ranks allocate with, or null for glibc's malloc. */
    public String note() {
        return preload == null
                ? null
                : "ranks allocate with "
                        + preload.getFileName()
                        + " (preloaded from "
                        + preload.getParent()
                        + ")";
    }

    /**
     * Returns the variables that make a rank allocate with this allocator: the library first in
     * {@code LD_PRELOAD}, ahead of what is already preloaded.
     *
     * @param inherited the rank's environment so far
     * @return the variables to set, empty for glibc's malloc
     */
    public Map<String, String> variables(Map<String, String> inherited) {
        Map<String, String> variables = new LinkedHashMap<>();
        if (preload == null) {
            return variables;
        }
        String preloaded = inherited.getOrDefault("LD_PRELOAD", "").trim();
        if (preloaded.isEmpty()) {
            variables.put("LD_PRELOAD", preload.toString());
        } else if (!Arrays.asList(preloaded.split("[: ]+")).contains(preload.toString())) {
            // A rank that starts ranks itself hands the same library down once.
            variables.put("LD_PRELOAD", preload + ":" + preloaded);
        }
        if (preload.getFileName().toString().startsWith("libtcmalloc")
                && !inherited.containsKey(LARGE_ALLOC_REPORT_VARIABLE)) {
            // Parameters of a few gigabytes are expected, not worth a line each.
            variables.put(LARGE_ALLOC_REPORT_VARIABLE, Long.toString(1L << 40));
        }
        return variables;
    }

    /** The first of {@code names} installed in {@code directories}, or an error saying how. */
    private static RankAllocator installed(
            String choice, List<String> names, String install, List<Path> directories) {
        for (String name : names) {
            for (Path directory : directories) {
                Path library = directory.resolve(name);
                if (Files.isRegularFile(library)) {
                    return new RankAllocator(library.toAbsolutePath());
                }
            }
        }
        throw new IllegalArgumentException(
                named(choice)
                        + "none of "
                        + names
                        + " is in "
                        + directories
                        + "; install it ("
                        + install
                        + ") or choose --allocator glibc (unset "
                        + VARIABLE
                        + ")");
    }

    private static String named(String choice) {
        return "--allocator " + choice + " (" + VARIABLE + "): ";
    }
}
