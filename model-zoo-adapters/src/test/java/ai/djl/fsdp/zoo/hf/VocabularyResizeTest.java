package ai.djl.fsdp.zoo.hf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.safetensors.SafetensorsCheckpoint;
import ai.djl.fsdp.safetensors.SafetensorsWriter;
import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.ndarray.NDManager;
import com.google.gson.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A checkpoint's vocabulary grown as it loads: the new rows' mean and covariance are the stored
 * rows' (covariance scaled by 1e-9) within sampling bounds, the mean where that covariance is not
 * positive definite, the configured normal without mean resizing; under FSDP on one rank and on two
 * the grown model is the same to the bit, its stored rows and every other tensor the checkpoint's.
 */
class VocabularyResizeTest {

    private static final int WIDTH = 4;

    /** Stored rows {@code mu + A g}, g standard normal: a known mean and covariance. */
    private static float[] knownRows(int rows, long seed) {
        double[] mu = {0.01, -0.02, 0.03, 0.0};
        double[][] a = {{0.5, 0, 0, 0}, {0.2, 0.3, 0, 0}, {-0.1, 0.1, 0.4, 0}, {0, 0.05, 0.2, 0.1}};
        Random random = new Random(seed);
        float[] values = new float[rows * WIDTH];
        for (int r = 0; r < rows; r++) {
            double[] g = new double[WIDTH];
            for (int j = 0; j < WIDTH; j++) {
                g[j] = random.nextGaussian();
            }
            for (int k = 0; k < WIDTH; k++) {
                double v = mu[k];
                for (int j = 0; j <= k; j++) {
                    v += a[k][j] * g[j];
                }
                values[r * WIDTH + k] = (float) v;
            }
        }
        return values;
    }

    private static double[] mean(float[] values, int from, int rows) {
        double[] mean = new double[WIDTH];
        for (int r = from; r < from + rows; r++) {
            for (int k = 0; k < WIDTH; k++) {
                mean[k] += values[r * WIDTH + k];
            }
        }
        for (int k = 0; k < WIDTH; k++) {
            mean[k] /= rows;
        }
        return mean;
    }

    private static double[][] covariance(float[] values, int from, int rows) {
        double[] mean = mean(values, from, rows);
        double[][] c = new double[WIDTH][WIDTH];
        for (int r = from; r < from + rows; r++) {
            for (int i = 0; i < WIDTH; i++) {
                for (int j = 0; j < WIDTH; j++) {
                    c[i][j] +=
                            (values[r * WIDTH + i] - mean[i]) * (values[r * WIDTH + j] - mean[j]);
                }
            }
        }
        for (int i = 0; i < WIDTH; i++) {
            for (int j = 0; j < WIDTH; j++) {
                c[i][j] /= rows;
            }
        }
        return c;
    }

    /** Grows a stored [rows, 4] matrix to {@code grown} rows and returns the added rows. */
    private static float[] added(Path directory, float[] stored, int grown, boolean meanResizing)
            throws Exception {
        int rows = stored.length / WIDTH;
        Path file = directory.resolve("model.safetensors");
        try (NDManager manager = TestModels.newManager()) {
            new SafetensorsWriter()
                    .add("w", manager.create(stored).reshape(rows, WIDTH))
                    .write(file);
            try (SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint.open(file)) {
                AddedRows added =
                        new AddedRows(
                                VocabularyResize.of(rows, grown, meanResizing, 0.02f, 42),
                                "model.embed_tokens.weight",
                                WIDTH);
                assertEquals((long) rows * WIDTH, added.storedElements());
                return added.read(manager, checkpoint, "w", 0, (long) (grown - rows) * WIDTH)
                        .toFloatArray();
            }
        }
    }

    @Test
    void newRowsHaveTheStoredRowsMeanAndScaledCovariance(@TempDir Path directory) throws Exception {
        int stored = 3000;
        int drawn = 8000;
        float[] old = knownRows(stored, 1);
        float[] rows = added(directory, old, stored + drawn, true);
        double[] mu = mean(old, 0, stored);
        double[][] sigma = covariance(old, 0, stored);
        double[] mean = mean(rows, 0, drawn);
        double[][] cov = covariance(rows, 0, drawn);
        double scale = AddedRows.COVARIANCE_SCALE;
        for (int i = 0; i < WIDTH; i++) {
            // Five standard errors of a sample mean, plus float32's rounding near mu.
            double bound = 5 * Math.sqrt(scale * sigma[i][i] / drawn) + Math.ulp((float) mu[i]);
            assertTrue(Math.abs(mean[i] - mu[i]) < bound, i + ": " + mean[i] + " vs " + mu[i]);
            for (int j = 0; j < WIDTH; j++) {
                double expected = scale * sigma[i][j];
                double spread =
                        scale
                                * Math.sqrt(
                                        (sigma[i][i] * sigma[j][j] + sigma[i][j] * sigma[i][j])
                                                / drawn);
                // float32 rows round each deviation by up to half an ulp of mu.
                double rounding = 2 * Math.sqrt(scale * sigma[i][i]) * Math.ulp((float) mu[j]);
                assertTrue(
                        Math.abs(cov[i][j] - expected) < 5 * spread + rounding,
                        i + "," + j + ": " + cov[i][j] + " vs " + expected);
            }
        }
        assertArrayEquals(
                rows, added(directory, old, stored + drawn, true), "the same seed, the same rows");
    }

    @Test
    void aSingularCovarianceGivesTheMean(@TempDir Path directory) throws Exception {
        // Every stored row has the same last two columns: their variance is zero.
        float[] old = knownRows(100, 2);
        for (int r = 0; r < 100; r++) {
            old[r * WIDTH + 2] = 0.25f;
            old[r * WIDTH + 3] = -0.5f;
        }
        float[] rows = added(directory, old, 107, true);
        double[] mu = mean(old, 0, 100);
        for (int r = 0; r < 7; r++) {
            for (int k = 0; k < WIDTH; k++) {
                assertEquals((float) mu[k], rows[r * WIDTH + k], "row " + r + ", column " + k);
            }
        }
    }

    @Test
    void withoutMeanResizingNewRowsAreTheConfiguredNormal(@TempDir Path directory)
            throws Exception {
        float[] rows = added(directory, knownRows(50, 3), 50 + 5000, false);
        double sum = 0;
        double squares = 0;
        for (float v : rows) {
            sum += v;
            squares += v * v;
        }
        double mean = sum / rows.length;
        double std = Math.sqrt(squares / rows.length - mean * mean);
        assertTrue(Math.abs(mean) < 5 * 0.02 / Math.sqrt(rows.length), "mean " + mean);
        assertEquals(0.02, std, 5 * 0.02 / Math.sqrt(2.0 * rows.length), "std");
    }

    @Test
    void sizesAreRoundedUpAndAMultipleMustBePositive() {
        assertEquals(50264, VocabularyResize.paddedSize(50259, 8));
        assertEquals(50259, VocabularyResize.paddedSize(50259, 1));
        assertEquals(264, VocabularyResize.paddedSize(264, 8));
        for (int multiple : new int[] {0, -8}) {
            IllegalArgumentException e =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> VocabularyResize.paddedSize(259, multiple));
            assertTrue(e.getMessage().startsWith("--pad_to_multiple_of must be positive"));
        }
        assertThrows(IllegalArgumentException.class, () -> VocabularyResize.of(10, 10, true, 0, 0));
    }

    /**
     * A checkpoint of 257 rows grown to 264 under FSDP, a Llama (untied head: the embedding and the
     * head each a unit, so the added rows fall in the last rank's shards) and a GPT-2 (the head
     * tied to wte, both in the root): one rank and two ranks save the same model to the bit; its
     * first 257 rows and every other tensor are the checkpoint's; config.json says 264.
     */
    @ParameterizedTest
    @ValueSource(strings = {"llama-tiny", "gpt2-tiny"})
    void oneAndTwoRanksGrowTheSameModel(String family, @TempDir Path directory) throws Exception {
        Path checkpoint = directory.resolve(family);
        JsonObject json = Models.builtin(family).toJson();
        json.addProperty("vocab_size", 257);
        try (NDManager manager = TestModels.newManager()) {
            CausalLM lm = Models.create(ModelFamilies.parse(json), manager);
            HfCheckpoint.save(lm, checkpoint);
        }
        Path one = grow(checkpoint, directory.resolve("one"), 1);
        Path two = grow(checkpoint, directory.resolve("two"), 2);
        assertEquals(264, ModelFamilies.read(one).vocabSize());
        try (NDManager manager = TestModels.newManager();
                SafetensorsCheckpoint original = SafetensorsCheckpoint.open(checkpoint);
                SafetensorsCheckpoint first = SafetensorsCheckpoint.open(one);
                SafetensorsCheckpoint second = SafetensorsCheckpoint.open(two)) {
            assertEquals(original.names(), first.names());
            for (String name : first.names()) {
                float[] a = first.read(manager, name).toFloatArray();
                assertArrayEquals(a, second.read(manager, name).toFloatArray(), name);
                float[] stored = original.read(manager, name).toFloatArray();
                float[] prefix = new float[stored.length];
                System.arraycopy(a, 0, prefix, 0, stored.length);
                assertArrayEquals(stored, prefix, name + ": the stored values, bit for bit");
                // GPT-2's head is tied to wte, stored once under wte's name: it grew with it.
                boolean vocabulary =
                        name.endsWith("embed_tokens.weight")
                                || name.equals("lm_head.weight")
                                || name.endsWith("wte.weight");
                assertEquals(
                        vocabulary ? stored.length * 264 / 257 : stored.length, a.length, name);
            }
        }
        assertTrue(Files.exists(one.resolve(ConfigJson.FILE)));
    }

    private static Path grow(Path checkpoint, Path output, int ranks) {
        try (RankProcesses job =
                RankProcesses.builder(ResizeRankMain.class)
                        .worldSize(ranks)
                        .args(checkpoint.toString(), output.toString(), "264", "42")
                        .timeout(Duration.ofMinutes(3))
                        .start()) {
            job.await().assertAllSucceeded();
        }
        return output;
    }
}
