package ai.djl.fsdp.zoo.t5;

import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.engine.Engine;
import ai.djl.fsdp.safetensors.SafetensorsFile;
import ai.djl.fsdp.zoo.ReferenceChecks;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.fsdp.zoo.sharded.CausalLmLoss;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.training.GradientCollector;
import ai.djl.training.ParameterStore;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * T5 against an independent PyTorch implementation of Hugging Face's T5 math ({@code
 * pytorch-t5/reference.py} beside this test's resources wrote the checkpoints and the expected
 * numbers): logits, the cross-entropy over the labels that are not -100, and its gradient with
 * respect to every parameter, float32, within 1e-5 of the largest expected magnitude; the decoder's
 * inputs shifted right as Hugging Face shifts them; and the relative position buckets of 601
 * distances, both directions, each case's settings and T5's own. The cases: {@code relu} with a
 * tied head, 2 encoder and 3 decoder blocks, heads whose total width is not {@code d_model}; {@code
 * gated-gelu} with an untied head, 3 encoder and 2 decoder blocks; both with a padded source row
 * and ignored labels. Run again under ATen's {@code default} and {@code avx2} kernels by the
 * module's build.
 */
class T5ExactnessTest {

    /** Relative to the largest expected magnitude of each tensor. */
    private static final double TOLERANCE = 1e-5;

    @ParameterizedTest
    @ValueSource(strings = {"relu-tied", "gated-untied"})
    void matchesPyTorch(String name) throws IOException, URISyntaxException {
        Path dir = directory(name);
        JsonObject expected = expected(dir);
        try (NDManager manager = TestModels.newManager();
                SafetensorsFile reference =
                        SafetensorsFile.open(dir.resolve("expected.safetensors"))) {
            T5ForConditionalGeneration model =
                    (T5ForConditionalGeneration) Models.loadPretrained(dir, manager);
            NDArray ids = ReferenceChecks.ids(manager, expected.getAsJsonArray("input_ids"));
            NDArray mask = ReferenceChecks.ids(manager, expected.getAsJsonArray("attention_mask"));
            NDArray labels = ReferenceChecks.ids(manager, expected.getAsJsonArray("labels"));
            NDArray decoderIds = model.getConfig().shiftRight(labels);
            assertEquals(
                    ReferenceChecks.ids(manager, expected.getAsJsonArray("decoder_input_ids")),
                    decoderIds,
                    name + " decoder inputs");
            double worst;
            try (GradientCollector collector = Engine.getInstance().newGradientCollector()) {
                NDArray logits =
                        model.forward(
                                new ParameterStore(manager, false), ids, mask, decoderIds, true);
                worst = check(name + " logits", logits, reference.read(manager, "logits"));
                NDArray loss = new CausalLmLoss().evaluate(new NDList(labels), new NDList(logits));
                double expectedLoss = expected.get("loss").getAsDouble();
                assertEquals(expectedLoss, loss.getFloat(), TOLERANCE * expectedLoss, name);
                collector.backward(loss);
            }
            worst =
                    Math.max(
                            worst,
                            ReferenceChecks.gradients(name, model, reference, manager, TOLERANCE));
            System.out.printf(
                    Locale.ROOT,
                    "%s (ATEN_CPU_CAPABILITY=%s): largest relative difference %.3g%n",
                    name,
                    System.getenv().getOrDefault("ATEN_CPU_CAPABILITY", "native"),
                    worst);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"relu-tied", "gated-untied"})
    void bucketsMatchPyTorch(String name) throws IOException, URISyntaxException {
        JsonObject tables = expected(directory(name)).getAsJsonObject("buckets");
        for (Map.Entry<String, JsonElement> table : tables.entrySet()) {
            String[] key = table.getKey().split("/");
            int buckets = Integer.parseInt(key[0]);
            int distance = Integer.parseInt(key[1]);
            boolean bidirectional = key[2].equals("bidirectional");
            JsonArray values = table.getValue().getAsJsonArray();
            for (int i = 0; i < values.size(); i++) {
                int relative = i - 300;
                assertEquals(
                        values.get(i).getAsInt(),
                        RelativePositionBuckets.bucket(relative, bidirectional, buckets, distance),
                        table.getKey() + " at relative position " + relative);
            }
        }
    }

    private Path directory(String name) throws URISyntaxException {
        return Path.of(getClass().getResource("pytorch-t5/" + name).toURI());
    }

    private static JsonObject expected(Path dir) throws IOException {
        return JsonParser.parseString(Files.readString(dir.resolve("expected.json")))
                .getAsJsonObject();
    }

    private static double check(String what, NDArray actual, NDArray expected) {
        return ReferenceChecks.relativeDifference(what, actual, expected, TOLERANCE);
    }
}
