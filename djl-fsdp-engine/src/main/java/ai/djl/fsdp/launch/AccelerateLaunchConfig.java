package ai.djl.fsdp.launch;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.error.YAMLException;

/**
 * Accelerate's config file (as {@code accelerate config} writes it, old and new key spellings),
 * read the way {@code accelerate launch} reads it: the job's shape ({@code num_processes}, the
 * ranks over all machines, {@code num_machines}, {@code machine_rank}, {@code main_process_ip},
 * {@code main_process_port}; absent or null keys are null) and the training settings as the
 * variables {@code accelerate launch} gives its ranks ({@link AccelerateEnvironment}). Every key is
 * checked: an unknown one is an error naming the nearest known key; those with no meaning here are
 * named in one note.
 */
public final class AccelerateLaunchConfig {

    private final Path file;
    private final Set<String> flagKeys;
    private final Integer numProcesses;
    private final Integer numMachines;
    private final Integer machineRank;
    private final String mainProcessIp;
    private final Integer mainProcessPort;
    private final Map<String, String> environment;
    private final List<String> notes = new ArrayList<>();

    private AccelerateLaunchConfig(Path file, Map<?, ?> yaml, Map<String, Object> flags) {
        this.file = file;
        this.flagKeys = flags.keySet();
        Set<String> withoutMeaning = new TreeSet<>();
        for (Object key : yaml.keySet()) {
            String name = String.valueOf(key);
            AccelerateKeys.requireKnown(file, name, AccelerateKeys.TOP, "");
            if (AccelerateKeys.WITHOUT_MEANING.contains(name)) {
                withoutMeaning.add(name);
            }
        }
        if (!withoutMeaning.isEmpty()) {
            notes.add(
                    "config keys for Accelerate's other backends and machines, with no meaning"
                            + " here: "
                            + String.join(", ", withoutMeaning));
        }
        // The command line's flags over the file's keys, as accelerate launch takes them.
        Map<Object, Object> top = new LinkedHashMap<>(yaml);
        Map<String, Object> fsdp = fsdpConfig(yaml.get("fsdp_config"));
        Set<String> fsdpFlags = new TreeSet<>();
        flags.forEach(
                (key, value) -> {
                    if (AccelerateKeys.FSDP.contains(key)) {
                        fsdp.put(key, value);
                        fsdpFlags.add("--" + key);
                    } else {
                        top.put(key, value);
                    }
                });
        Object type = top.get("distributed_type");
        boolean usesFsdp = "FSDP".equals(type) || (type == null && top.get("fsdp_config") != null);
        if (!usesFsdp && !fsdpFlags.isEmpty()) {
            notes.add(
                    String.join(", ", fsdpFlags)
                            + " without --use_fsdp (or distributed_type: FSDP in a config file):"
                            + " not passed on, as accelerate launch does; add --use_fsdp");
        }
        if (type != null && !"FSDP".equals(type)) {
            notes.add(
                    "distributed_type "
                            + type
                            + ": ACCELERATE_USE_FSDP is not set; bin/fsdp finetune trains with"
                            + " FSDP regardless");
        }
        environment = AccelerateEnvironment.of(this::where, top, fsdp);
        numProcesses = integer(top, "num_processes", 1);
        numMachines = integer(top, "num_machines", 1);
        machineRank = integer(top, "machine_rank", 0);
        Object ip = top.get("main_process_ip");
        mainProcessIp = ip == null || ip.toString().isBlank() ? null : ip.toString().trim();
        mainProcessPort = integer(top, "main_process_port", 1);
    }

    /**
     * Reads the launcher's keys of a config file.
     *
     * @param file the YAML file
     * @return its launcher settings
     * @throws IllegalArgumentException naming the file (and key) when the file is missing, not
     *     YAML, not a mapping, or a key's value is not a number in range
     */
    public static AccelerateLaunchConfig read(Path file) {
        return of(file, Map.of());
    }

    /**
     * Reads a config file, if any, with {@code accelerate launch}'s own flags over its keys (the
     * command line wins, as in Accelerate).
     *
     * @param file the YAML file, or null for the flags alone
     * @param flags top-level keys ({@code num_processes}, {@code mixed_precision}, {@code
     *     distributed_type} for {@code --use_fsdp}, ...) and {@code fsdp_*} keys with their values
     * @return the launcher settings
     * @throws IllegalArgumentException naming the file and key, or the flag, for a bad value
     */
    public static AccelerateLaunchConfig of(Path file, Map<String, Object> flags) {
        if (file == null) {
            return new AccelerateLaunchConfig(null, Map.of(), flags);
        }
        Object yaml;
        try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            yaml = new Yaml(new SafeConstructor(new LoaderOptions())).load(reader);
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException(
                    "--config_file "
                            + file
                            + " does not exist: give the file accelerate config"
                            + " wrote");
        } catch (IOException | YAMLException e) {
            throw new IllegalArgumentException(
                    "--config_file " + file + " cannot be read as YAML: " + e.getMessage(), e);
        }
        if (!(yaml instanceof Map)) {
            throw new IllegalArgumentException(
                    "--config_file "
                            + file
                            + " must be a YAML mapping of Accelerate's keys (num_processes: 2,"
                            + " ...)");
        }
        return new AccelerateLaunchConfig(file, (Map<?, ?>) yaml, flags);
    }

    /**
     * Names where a key's value came from, for messages: the flag, or the file and key.
     *
     * @param key a top-level key, or {@code fsdp_config.fsdp_*}
     * @return {@code --key}, or {@code --config_file FILE: key}
     */
    private String where(String key) {
        String bare = key.substring(key.indexOf('.') + 1);
        return flagKeys.contains(bare) ? "--" + bare : "--config_file " + file + ": " + key;
    }

    /**
     * Returns the variables {@code accelerate launch} would give the ranks for this file.
     *
     * @return the variables ({@link AccelerateEnvironment})
     */
    public Map<String, String> getEnvironment() {
        return environment;
    }

    /**
     * Returns one line for each thing the file asks that has no meaning here.
     *
     * @return the notes
     */
    public List<String> getNotes() {
        return notes;
    }

    /** Returns {@code num_processes}: the ranks over all machines, or null. */
    public Integer getNumProcesses() {
        return numProcesses;
    }

    /** Returns {@code num_machines}, or null. */
    public Integer getNumMachines() {
        return numMachines;
    }

    /** Returns {@code machine_rank}, or null. */
    public Integer getMachineRank() {
        return machineRank;
    }

    /** Returns {@code main_process_ip}, or null. */
    public String getMainProcessIp() {
        return mainProcessIp;
    }

    /** Returns {@code main_process_port}, or null. */
    public Integer getMainProcessPort() {
        return mainProcessPort;
    }

    /**
     * Returns the ranks per machine: {@code num_processes / nodes}.
     *
     * @param nodes the machines in the job
     * @return the ranks this machine starts
     * @throws IllegalArgumentException when {@code num_processes} is absent or does not divide
     */
    public int processesPerMachine(int nodes) {
        if (numProcesses == null || numProcesses % nodes != 0) {
            throw new IllegalArgumentException(
                    where("num_processes")
                            + " ("
                            + numProcesses
                            + ") must be the ranks over all "
                            + nodes
                            + " machines, a multiple of it; or give --nproc-per-node");
        }
        return numProcesses / nodes;
    }

    /** {@code fsdp_config}'s keys, checked and spelt {@code fsdp_*} as Accelerate reads them. */
    private Map<String, Object> fsdpConfig(Object value) {
        Map<String, Object> fsdp = new LinkedHashMap<>();
        if (value == null) {
            return fsdp;
        }
        if (!(value instanceof Map<?, ?> map)) {
            throw new IllegalArgumentException(
                    "--config_file " + file + ": fsdp_config must be a mapping of fsdp_* keys");
        }
        for (Map.Entry<?, ?> entry : map.entrySet()) {
            String key = String.valueOf(entry.getKey());
            key = key.startsWith("fsdp") ? key : "fsdp_" + key;
            AccelerateKeys.requireKnown(file, key, AccelerateKeys.FSDP, "fsdp_config.");
            if (entry.getValue() != null) {
                fsdp.put(key, entry.getValue());
            }
        }
        return fsdp;
    }

    private Integer integer(Map<?, ?> yaml, String key, int least) {
        Object value = yaml.get(key);
        if (value == null) {
            return null;
        }
        if (!(value instanceof Integer) || (Integer) value < least) {
            throw new IllegalArgumentException(
                    where(key)
                            + " must be an integer of at least "
                            + least
                            + ", got '"
                            + value
                            + "'");
        }
        return (Integer) value;
    }
}
