package ai.djl.fsdp.dist;

import ai.djl.fsdp.rendezvous.Store;

/**
 * Keeps a job's store to the job's own ranks when another job reaches it with the same job token
 * and run id (the multi-node recipe's exported {@code DJL_FSDP_JOB_TOKEN} and {@code
 * DJL_FSDP_RUN_ID} reused for a second job on the same port), which the store's handshake cannot
 * tell apart: before it writes anything else in the store, every rank claims its rank's slot, and a
 * second claim of a slot is another job's rank. By the time a job's ring is formed every slot is
 * claimed, so a running job is never joined; the refused rank has changed nothing the job reads,
 * and fails saying the port is in use by another job.
 */
final class StoreAdmission {

    private StoreAdmission() {}

    /**
     * Claims this rank's slot in the store, or refuses the rank.
     *
     * @param store the job's store
     * @param env this rank
     * @throws CollectiveException if the slot is taken: the store belongs to another job
     */
    static void admit(Store store, DistributedEnv env) {
        if (store.add(slotKey(env.getRank()), 1) > 1) {
            throw new CollectiveException(
                    "Rank "
                            + env.getRank()
                            + ": the store at "
                            + env.getMasterAddr()
                            + ':'
                            + env.getMasterPort()
                            + " belongs to another job with the same "
                            + DistributedEnv.JOB_TOKEN_VARIABLE
                            + " and "
                            + DistributedEnv.RUN_ID_VARIABLE
                            + " ('"
                            + env.getRunId()
                            + "'), whose rank "
                            + env.getRank()
                            + " has already joined it: the port is in use by another job, which"
                            + " this rank left alone. Give each job its own MASTER_PORT"
                            + " (--master-port) or "
                            + DistributedEnv.RUN_ID_VARIABLE);
        }
    }

    static String slotKey(int rank) {
        return "admission/rank/" + rank;
    }
}
