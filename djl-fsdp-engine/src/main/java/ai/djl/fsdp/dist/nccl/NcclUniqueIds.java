package ai.djl.fsdp.dist.nccl;

import ai.djl.fsdp.dist.CollectiveException;
import ai.djl.fsdp.rendezvous.Store;
import org.bytedeco.cuda.global.nccl;
import org.bytedeco.cuda.nccl.ncclUniqueId;

/**
 * How the ranks agree on a communicator's NCCL unique id through the job's store: rank 0 makes it
 * and publishes it, the others read it, under a key of that communicator's own, so that one store
 * can set up several communicators in turn.
 */
final class NcclUniqueIds {

    /** The prefix of the store keys under which rank 0 publishes each communicator's unique id. */
    static final String UNIQUE_ID_KEY_PREFIX = "nccl/unique-id/";

    /** The store counter every rank bumps as it joins a communicator. */
    static final String JOINS_KEY = "nccl/joins";

    private NcclUniqueIds() {}

    /**
     * Returns the unique id of the communicator of {@code worldSize} ranks this rank is joining:
     * made and published by rank 0, read from the store by the others.
     *
     * @throws CollectiveException if NCCL cannot make one, or the one published has another size
     */
    static ncclUniqueId exchange(Store store, int rank, int worldSize) {
        String idKey = uniqueIdKey(store, worldSize);
        ncclUniqueId id = new ncclUniqueId();
        byte[] idBytes = new byte[nccl.NCCL_UNIQUE_ID_BYTES];
        if (rank == 0) {
            NcclStatus.checkNccl(nccl.ncclGetUniqueId(id), "ncclGetUniqueId", rank);
            id.internal().get(idBytes);
            store.set(idKey, idBytes);
            return id;
        }
        byte[] published = store.get(idKey);
        if (published.length != idBytes.length) {
            throw new CollectiveException(
                    "The NCCL unique id in the store has "
                            + published.length
                            + " bytes, expected "
                            + idBytes.length
                            + ": do all ranks use the same NCCL?");
        }
        id.internal().put(published);
        return id;
    }

    /**
     * Returns the key of the communicator this rank is joining. Joining a communicator waits for
     * all ranks, so every rank has counted itself into one before any counts itself into the next:
     * the {@code worldSize} joins of communicator {@code g} are counts {@code g * worldSize + 1} to
     * {@code (g + 1) * worldSize}.
     */
    static String uniqueIdKey(Store store, int worldSize) {
        long generation = (store.add(JOINS_KEY, 1) - 1) / worldSize;
        return UNIQUE_ID_KEY_PREFIX + generation;
    }
}
