package ai.djl.fsdp.zoo.models;

import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.engine.Engine;
import ai.djl.fsdp.safetensors.SafetensorsFile;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.ReferenceChecks;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.nn.AttentionKernel;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.training.GradientCollector;
import ai.djl.training.ParameterStore;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Each family built on Llama's block against an independent PyTorch implementation of Hugging
 * Face's modeling math ({@code pytorch-families/reference.py} beside this test's resources wrote
 * the checkpoints and the expected numbers): logits and the gradient of the next-token
 * cross-entropy with respect to every parameter, float32, within 1e-5 of the largest expected
 * magnitude, with both attention kernels. Each case switches its family's features on: llama3,
 * linear and dynamic RoPE scaling past the pretrained length, a sliding window shorter than the
 * sequence, q/k/v biases, q/k norms with a head size of its own, grouped-query attention, tied and
 * untied heads, MLP biases.
 */
class FamilyExactnessTest {

    /** Relative to the largest expected magnitude of each tensor. */
    private static final double TOLERANCE = 1e-5;

    @ParameterizedTest
    @ValueSource(strings = {"llama3", "linear", "dynamic", "mistral", "qwen2", "qwen3"})
    void matchesPyTorch(String name) throws IOException, URISyntaxException {
        Path dir = Path.of(getClass().getResource("pytorch-families/" + name).toURI());
        JsonObject expected =
                JsonParser.parseString(Files.readString(dir.resolve("expected.json")))
                        .getAsJsonObject();
        for (AttentionKernel kernel : AttentionKernel.values()) {
            try (NDManager manager = TestModels.newManager();
                    SafetensorsFile reference =
                            SafetensorsFile.open(dir.resolve("expected.safetensors"))) {
                CausalLM model = Models.load(dir, manager);
                kernel.applyTo(model);
                NDArray ids = ReferenceChecks.ids(manager, expected.getAsJsonArray("input_ids"));
                double worst = 0;
                try (GradientCollector collector = Engine.getInstance().newGradientCollector()) {
                    NDArray logits =
                            model.forward(
                                    new ParameterStore(manager, false), ids, null, null, true);
                    worst = check(name + " logits", logits, reference.read(manager, "logits"));
                    NDArray loss = crossEntropy(logits, ids, model.getConfig().vocabSize());
                    assertEquals(
                            expected.get("loss").getAsDouble(),
                            loss.getFloat(),
                            TOLERANCE * expected.get("loss").getAsDouble(),
                            name + " loss");
                    collector.backward(loss);
                }
                worst =
                        Math.max(
                                worst,
                                ReferenceChecks.gradients(
                                        name, model, reference, manager, TOLERANCE));
                System.out.printf(
                        Locale.ROOT,
                        "%s (%s kernel, ATEN_CPU_CAPABILITY=%s): largest relative difference"
                                + " %.3g%n",
                        name,
                        kernel.getName(),
                        System.getenv().getOrDefault("ATEN_CPU_CAPABILITY", "native"),
                        worst);
            }
        }
    }

    /** The mean cross-entropy of each next token, as {@code torch.nn.functional.cross_entropy}. */
    private static NDArray crossEntropy(NDArray logits, NDArray ids, int vocab) {
        NDArray logProbabilities = logits.get(":, :-1, :").logSoftmax(-1);
        NDArray targets = ids.get(":, 1:").oneHot(vocab).toType(DataType.FLOAT32, false);
        long count = targets.getShape().get(0) * targets.getShape().get(1);
        return logProbabilities.mul(targets).sum().neg().div(count);
    }

    private static double check(String what, NDArray actual, NDArray expected) {
        return ReferenceChecks.relativeDifference(what, actual, expected, TOLERANCE);
    }
}
