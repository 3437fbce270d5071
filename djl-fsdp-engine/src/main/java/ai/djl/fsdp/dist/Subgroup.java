package ai.djl.fsdp.dist;

import ai.djl.fsdp.rendezvous.Store;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * Who belongs to one group of a {@link ProcessGroup#split}: the ranks that gave the same color, in
 * their parent's order, agreed on through the job's store. Every backend splits through it, so a
 * subgroup's store keys and its name in messages are the same on the socket ring and on NCCL.
 */
public final class Subgroup {

    private final String parentKeyPrefix;
    private final long split;
    private final String name;
    private final int color;
    private final int[] jobRanks;
    private final int rank;

    private Subgroup(
            String parentKeyPrefix, long split, String name, int color, int[] jobRanks, int rank) {
        this.parentKeyPrefix = parentKeyPrefix;
        this.split = split;
        this.name = name;
        this.color = color;
        this.jobRanks = jobRanks;
        this.rank = rank;
    }

    /**
     * Publishes this rank's color and reads every other rank's (a collective over the parent).
     *
     * @param store the job's store
     * @param parent the subgroup being split, or null for the job's group: its store keys prefix
     *     the split's, so that subgroups split again (each its own way, at the same time) never
     *     share a key
     * @param split how many splits of the parent this process made before this one: every rank of
     *     the parent splits it in the same order, as it calls collectives, so the count tells
     *     splits apart
     * @param name the split's name, the same on every rank of the parent
     * @param color this rank's color: ranks of one color form one subgroup
     * @param parentRank this rank's place in the parent
     * @param parentJobRanks the job rank at each place of the parent
     * @return this rank's subgroup
     * @throws IllegalArgumentException if the color is negative or the name is blank
     */
    public static Subgroup agree(
            Store store,
            Subgroup parent,
            long split,
            String name,
            int color,
            int parentRank,
            int[] parentJobRanks) {
        check(name, color);
        String parentKeyPrefix = parent == null ? "" : parent.getKeyPrefix();
        String prefix = parentKeyPrefix + "split/" + split + '/';
        store.set(prefix + parentRank, Integer.toString(color).getBytes(StandardCharsets.UTF_8));
        int[] members =
                IntStream.range(0, parentJobRanks.length)
                        .filter(
                                r ->
                                        r == parentRank
                                                || Integer.parseInt(
                                                                new String(
                                                                        store.get(prefix + r),
                                                                        StandardCharsets.UTF_8))
                                                        == color)
                        .toArray();
        int rank = Arrays.binarySearch(members, parentRank);
        int[] jobRanks = Arrays.stream(members).map(r -> parentJobRanks[r]).toArray();
        return new Subgroup(parentKeyPrefix, split, name, color, jobRanks, rank);
    }

    /**
     * Checks a split's arguments before anything is exchanged.
     *
     * @throws IllegalArgumentException if the color is negative or the name is blank
     */
    static void check(String name, int color) {
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException(
                    "A split needs a name, the same on every rank, such as \"shard\"; got "
                            + (name == null ? "null" : '"' + name + '"'));
        }
        if (color < 0) {
            throw new IllegalArgumentException(
                    "A split's color must be 0 or more (ranks of one color form a group): "
                            + color);
        }
    }

    /** Returns the split's name. */
    public String getName() {
        return name;
    }

    /** Returns this subgroup's color. */
    public int getColor() {
        return color;
    }

    /** Returns this rank's place in the subgroup. */
    public int getRank() {
        return rank;
    }

    /** Returns the number of ranks in the subgroup. */
    public int getSize() {
        return jobRanks.length;
    }

    /** Returns the job rank at each place of the subgroup. */
    public int[] getJobRanks() {
        return jobRanks.clone();
    }

    /**
     * Returns the prefix of the subgroup's own store keys (its ring's addresses, its barrier, its
     * own splits'), under its parent's: unique in the job however deep the splits go.
     */
    public String getKeyPrefix() {
        return parentKeyPrefix + "group/" + split + '/' + color + '/';
    }

    /**
     * Returns how messages name the subgroup, such as {@code subgroup replicate 1 (ranks 1, 3)}.
     */
    public String describe() {
        return "subgroup "
                + name
                + ' '
                + color
                + " (ranks "
                + Arrays.stream(jobRanks)
                        .mapToObj(Integer::toString)
                        .collect(Collectors.joining(", "))
                + ')';
    }
}
