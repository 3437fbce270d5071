package ai.djl.fsdp.zoo.t5;

import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.engine.Engine;
import ai.djl.fsdp.safetensors.SafetensorsCheckpoint;
import ai.djl.fsdp.safetensors.SafetensorsWriter;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.zoo.PretrainedModel;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.hf.ConfigJson;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A T5 saved as a Hugging Face checkpoint stores the shared table once, as {@code shared.weight}
 * (and no {@code lm_head.weight} when tied), and loads back to the same logits; a checkpoint that
 * also stores the table under the stacks' {@code embed_tokens.weight} and a tied {@code
 * lm_head.weight}, as older hub files do, loads too.
 */
class T5CheckpointTest {

    @ParameterizedTest
    @ValueSource(strings = {"relu", "gated-gelu"})
    void savesOnceAndLoadsBackUnderEveryName(String feedForward, @TempDir Path directory)
            throws IOException {
        try (NDManager manager = TestModels.newManager()) {
            Engine.getEngine("PyTorch").setRandomSeed(7);
            T5Config config = T5Config.of(40, 32, 4, 48, 2, 1, feedForward);
            T5ForConditionalGeneration t5 =
                    (T5ForConditionalGeneration) Models.createPretrained(config, manager);
            NDList batch = T5ShardedChecks.batch(manager, t5, 0, 0, 4);
            NDArray expected = logits(t5, manager, batch);

            Path saved = directory.resolve("saved");
            HfCheckpoint.save(t5, saved);
            Set<String> names = new TreeSet<>(StateDict.parameters(t5).keySet());
            try (SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint.open(saved)) {
                assertEquals(names, new TreeSet<>(checkpoint.names()));
            }
            assertEquals(expected, logits(Models.loadPretrained(saved, manager), manager, batch));

            Path everyName = directory.resolve("every-name");
            SafetensorsWriter writer = new SafetensorsWriter().putMetadata("format", "pt");
            for (Map.Entry<String, Parameter> entry : StateDict.parameters(t5).entrySet()) {
                writer.add(entry.getKey(), entry.getValue().getArray());
            }
            NDArray table = StateDict.parameters(t5).get("shared.weight").getArray();
            writer.add("encoder.embed_tokens.weight", table);
            writer.add("decoder.embed_tokens.weight", table);
            if (config.tieWordEmbeddings()) {
                writer.add("lm_head.weight", table);
            }
            writer.writeCheckpoint(everyName, HfCheckpoint.DEFAULT_MAX_SHARD_BYTES);
            ConfigJson.write(config, everyName);
            assertEquals(
                    expected, logits(Models.loadPretrained(everyName, manager), manager, batch));
        }
    }

    private static NDArray logits(PretrainedModel model, NDManager manager, NDList batch) {
        return ((T5ForConditionalGeneration) model)
                .forward(
                        new ParameterStore(manager, false),
                        batch.get(0),
                        batch.get(1),
                        batch.get(2),
                        false);
    }
}
