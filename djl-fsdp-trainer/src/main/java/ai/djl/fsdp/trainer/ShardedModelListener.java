package ai.djl.fsdp.trainer;

import ai.djl.training.listener.TrainingListener;

/**
 * A listener whose end of training needs the sharded model: the trainer ends it before it lets go
 * of the shards (DJL ends its listeners only after), and the listener ignores DJL's later call.
 */
interface ShardedModelListener extends TrainingListener {

    /**
     * Ends training while the model is still sharded (a collective where the listener saves).
     *
     * @param trainer the trainer
     */
    void endTraining(FsdpTrainer trainer);
}
