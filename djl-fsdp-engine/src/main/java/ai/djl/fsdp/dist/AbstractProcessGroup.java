package ai.djl.fsdp.dist;

import ai.djl.fsdp.rendezvous.Store;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What every backend's process group holds the same way: this rank's place among the group's job
 * ranks, its local rank, the job's store, the subgroup it was split as (none for the job's group),
 * and the splits it has made, with the getters over them.
 */
public abstract class AbstractProcessGroup implements ProcessGroup {

    /** How this group was split from its parent, or null for the job's group. */
    protected final Subgroup subgroup;

    /** This rank's rank in the group. */
    protected final int rank;

    /** The number of ranks in the group. */
    protected final int size;

    /** This rank's rank on its node. */
    protected final int localRank;

    /** The job rank of each of the group's ranks. */
    protected final int[] jobRanks;

    /** The job's store. */
    protected final Store store;

    private final AtomicLong splits = new AtomicLong();

    /**
     * Holds a group's membership.
     *
     * @param subgroup how the group was split from its parent, or null for the job's group
     * @param rank this rank's rank in the group
     * @param jobRanks the job rank of each of the group's ranks
     * @param localRank this rank's rank on its node
     * @param store the job's store
     */
    protected AbstractProcessGroup(
            Subgroup subgroup, int rank, int[] jobRanks, int localRank, Store store) {
        this.subgroup = subgroup;
        this.rank = rank;
        this.size = jobRanks.length;
        this.jobRanks = jobRanks;
        this.localRank = localRank;
        this.store = store;
    }

    /** {@inheritDoc} */
    @Override
    public final int getRank() {
        return rank;
    }

    /** {@inheritDoc} */
    @Override
    public final int getSize() {
        return size;
    }

    /** {@inheritDoc} */
    @Override
    public final int getLocalRank() {
        return localRank;
    }

    /**
     * Returns this rank's rank in the job.
     *
     * @return the job rank
     */
    protected final int jobRank() {
        return jobRanks[rank];
    }

    /**
     * Agrees with the group's other ranks, through the store, on the members of the subgroup this
     * rank joins by {@code color}; every rank of the group calls it for each split, in the same
     * order.
     *
     * @param name the split's name
     * @param color the subgroup this rank joins
     * @return the subgroup
     */
    protected final Subgroup agreeSplit(String name, int color) {
        return Subgroup.agree(
                store, subgroup, splits.getAndIncrement(), name, color, rank, jobRanks);
    }

    /**
     * Returns where a collective runs, for its description: empty for the job's group, else {@code
     * " in "} and the subgroup.
     *
     * @return the suffix
     */
    protected final String where() {
        return subgroup == null ? "" : " in " + subgroup.describe();
    }
}
