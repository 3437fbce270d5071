package ai.djl.fsdp.zoo.hf;

import ai.djl.Model;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.ModelConfig;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.fsdp.zoo.sharded.ShardedSave;
import ai.djl.fsdp.zoo.sharded.ShardedStart;
import com.google.gson.JsonObject;
import java.nio.file.Path;

/**
 * One rank of {@link VocabularyResizeTest}'s sharded load: grows a checkpoint's vocabulary to
 * {@code rows} under FSDP (default units: the untied embedding and head each a unit of its own) and
 * saves the grown model, one unit at a time, to the output directory.
 */
public final class ResizeRankMain {

    private ResizeRankMain() {}

    /**
     * Loads and saves.
     *
     * @param args the checkpoint directory, the output directory, the new vocabulary size, the seed
     * @throws Exception if loading or saving fails
     */
    public static void main(String[] args) throws Exception {
        Path checkpoint = Path.of(args[0]);
        int rows = Integer.parseInt(args[2]);
        ModelConfig stored = ModelFamilies.read(checkpoint);
        JsonObject json = stored.toJson();
        json.addProperty("vocab_size", rows);
        VocabularyResize resize =
                VocabularyResize.of(
                        stored.vocabSize(),
                        rows,
                        true,
                        ((PretrainedConfig) stored).initializerRange(),
                        Long.parseLong(args[3]));
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment());
                Model model = Model.newInstance("resize", group.getDevice())) {
            CausalLM lm = Models.forCheckpoint(ModelFamilies.parse(json));
            ShardedStart start =
                    TestModels.startSharded(
                            model, lm, checkpoint, resize, null, null, group, false);
            try (FsdpTrainer trainer = start.trainer()) {
                ShardedSave.merged(trainer, lm, Path.of(args[1]));
            }
        }
    }
}
