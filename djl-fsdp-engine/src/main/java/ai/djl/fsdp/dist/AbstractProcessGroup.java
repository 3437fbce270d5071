package ai.djl.fsdp.dist;

import ai.djl.fsdp.rendezvous.Store;
import ai.djl.fsdp.rendezvous.StoreException;
import ai.djl.fsdp.rendezvous.StoreTimeoutException;
import ai.djl.fsdp.util.Failures;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What every backend's process group holds the same way: this rank's place among the group's job
 * ranks, its local rank, the job's store, the subgroup it was split as (none for the job's group),
 * and the splits it has made, with the getters over them; and how the job's group leaves the store.
 */
public abstract class AbstractProcessGroup implements ProcessGroup {

    private static final Logger logger = LoggerFactory.getLogger(AbstractProcessGroup.class);

    /** The prefix of the store keys by which ranks other than 0 say they have left the job. */
    private static final String CLOSED_KEY_PREFIX = "job/closed/";

    /** How long rank 0 keeps the store up for the others to finish closing after a failure. */
    private static final Duration FAILED_CLOSE_WAIT = Duration.ofSeconds(2);

    private static final Duration MAX_CLOSE_WAIT = Duration.ofMinutes(1);

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

    /**
     * Says, through the job's store, that this rank is leaving the job, so that its neighbours'
     * {@link HeartbeatWatchdog}s do not take it for stopped once its heartbeats end: the job's
     * group calls it as it closes, before it stops its heartbeats.
     *
     * @param storeLost whether the store is known to be unreachable: then nothing is said
     */
    protected final void sayLeaving(boolean storeLost) {
        if (storeLost) {
            return;
        }
        try {
            store.set(HeartbeatWatchdog.LEAVING_KEY_PREFIX + jobRank(), new byte[0]);
        } catch (StoreException e) {
            logger.debug("Rank {} could not say it is leaving", jobRank(), e);
        }
    }

    /**
     * Leaves the job's store and closes it, as the job's group closes: a rank other than 0 says it
     * has left; rank 0, which hosts the store, first waits for the others to leave (at most the
     * timeout or a minute, 2 seconds after a failure), so that no rank finds the store gone while
     * it is still closing (its {@link HeartbeatWatchdog} would take that for rank 0's death).
     *
     * @param failed whether the job failed
     * @param storeLost whether the store is known to be unreachable: then it is only closed
     * @param timeout the group's timeout
     */
    protected final void leaveStore(boolean failed, boolean storeLost, Duration timeout) {
        try {
            if (storeLost) {
                return;
            }
            if (rank != 0) {
                store.set(CLOSED_KEY_PREFIX + rank, new byte[0]);
                return;
            }
            Duration wait =
                    failed
                            ? FAILED_CLOSE_WAIT
                            : timeout.compareTo(MAX_CLOSE_WAIT) < 0 ? timeout : MAX_CLOSE_WAIT;
            long deadline = System.nanoTime() + wait.toNanos();
            for (int r = 1; r < size; r++) {
                Duration left = Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
                try {
                    store.get(CLOSED_KEY_PREFIX + r, left);
                } catch (StoreTimeoutException e) {
                    logger.debug("Rank {} did not close its process group before rank 0", r);
                }
            }
        } catch (StoreException e) {
            logger.debug("Rank {} could not sign off from the store", rank, e);
        } finally {
            store.close();
        }
    }

    /**
     * Closes every group of {@code groups} (a group's splits), each whatever the others threw.
     *
     * @return the first failure, later ones suppressed under it; null if none failed
     */
    protected static CollectiveException closeEach(List<? extends ProcessGroup> groups) {
        CollectiveException failure = null;
        for (ProcessGroup group : groups) {
            try {
                group.close();
            } catch (CollectiveException e) {
                failure = Failures.suppress(failure, e);
            } catch (RuntimeException e) {
                failure =
                        Failures.suppress(
                                failure, new CollectiveException("closing a split failed", e));
            }
        }
        return failure;
    }
}
