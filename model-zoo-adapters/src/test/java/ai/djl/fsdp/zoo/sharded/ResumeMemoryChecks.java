package ai.djl.fsdp.zoo.sharded;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.ndarray.NDManager;
import java.nio.file.Path;

/**
 * On every rank of a job: the model of {@link SaveMemoryChecks} (its base in bfloat16, LoRA
 * adapters) trained one step and saved as a sharded checkpoint, which the trainer then loads, as a
 * resumed run does. During the load this rank's resident memory may grow by at most {@link
 * SaveMemoryChecks#BOUND} times the largest unit's float32 bytes: the checkpoint is read piece by
 * piece straight into the shards, and nothing it read is left behind for the step after it (the
 * resumed run's extra peak, when the pieces went through the Java heap, direct buffers and file
 * mappings that only the garbage collector frees).
 */
final class ResumeMemoryChecks {

    private ResumeMemoryChecks() {}

    /**
     * Runs the checks on one rank of a job described by the environment.
     *
     * @param args the directory the ranks share
     */
    public static void main(String[] args) throws Exception {
        Path checkpoint = Path.of(args[0]).resolve("ckpt");
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment());
                Model model = Model.newInstance("resume-memory", Device.cpu());
                NDManager manager = TestModels.newManager()) {
            CausalLM lm = SaveMemoryChecks.newBase(model);
            long unitBytes = SaveMemoryChecks.largestLayerBytes(lm);
            SaveMemoryChecks.addAdapters(model, lm);
            try (FsdpTrainer trainer = SaveMemoryChecks.newTrainer(model, group)) {
                SaveMemoryChecks.step(trainer, manager);
                trainer.saveCheckpoint(checkpoint);
                // One load, as a resumed run makes: the step and the save before it warmed up
                // what a process allocates once.
                long load = SaveMemoryChecks.growthDuring(() -> trainer.loadCheckpoint(checkpoint));
                System.out.printf(
                        "rank %d: largest unit %.1f MB; growth during the checkpoint's load %.1f MB"
                                + " (%.2fx)%n",
                        group.getRank(), unitBytes / 1e6, load / 1e6, (double) load / unitBytes);
                SaveMemoryChecks.check("checkpoint load", load, unitBytes);
                // The loaded state trains on.
                SaveMemoryChecks.step(trainer, manager);
            }
            group.barrier();
        }
        System.out.println("checks passed");
    }
}
