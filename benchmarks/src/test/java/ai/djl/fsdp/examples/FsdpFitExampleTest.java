package ai.djl.fsdp.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.training.dataset.ArrayDataset;
import ai.djl.training.dataset.Batch;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The examples' data: both splits one task, the validation points held out. */
class FsdpFitExampleTest {

    /** A split's points and labels, in order. */
    private record Split(float[][] points, long[] labels) {}

    private static Split read(NDManager manager, ArrayDataset dataset) throws Exception {
        List<float[]> rows = new ArrayList<>();
        List<Long> labels = new ArrayList<>();
        for (Batch batch : dataset.getData(manager)) {
            try (batch) {
                NDArray points = batch.getData().singletonOrThrow();
                int width = (int) points.getShape().get(1);
                float[] flat = points.toFloatArray();
                for (int i = 0; i < flat.length; i += width) {
                    rows.add(Arrays.copyOfRange(flat, i, i + width));
                }
                for (long label : batch.getLabels().singletonOrThrow().toLongArray()) {
                    labels.add(label);
                }
            }
        }
        return new Split(
                rows.toArray(float[][]::new), labels.stream().mapToLong(Long::longValue).toArray());
    }

    @Test
    void validationPointsAreHeldOutAndLabelledByTheTrainingTask() throws Exception {
        try (NDManager manager = NDManager.newBaseManager(Device.cpu())) {
            Split train =
                    read(manager, FsdpFitExample.dataset(manager, 4096, FsdpFitExample.TRAIN_SEED));
            Split validate =
                    read(
                            manager,
                            FsdpFitExample.dataset(manager, 512, FsdpFitExample.VALIDATE_SEED));
            assertEquals(4096, train.points().length);
            assertEquals(512, validate.points().length);

            Set<List<Float>> trainingPoints = new HashSet<>();
            for (float[] point : train.points()) {
                trainingPoints.add(boxed(point));
            }
            for (float[] point : validate.points()) {
                assertFalse(
                        trainingPoints.contains(boxed(point)),
                        "a validation point is a training point: " + Arrays.toString(point));
            }

            // Both splits are labelled by the same directions: the task trained is the one
            // validated.
            NDArray directions = FsdpFitExample.directions(manager);
            for (Split split : List.of(train, validate)) {
                NDArray points = manager.create(split.points());
                assertArrayEquals(
                        points.matMul(directions).argMax(1).toLongArray(), split.labels());
            }
            // Every class occurs in the held-out points.
            Set<Long> classes = new HashSet<>();
            Arrays.stream(validate.labels()).forEach(classes::add);
            assertEquals(10, classes.size());

            // A split is the same on every call (every rank draws the same global batches).
            Split again =
                    read(
                            manager,
                            FsdpFitExample.dataset(manager, 512, FsdpFitExample.VALIDATE_SEED));
            assertArrayEquals(validate.points(), again.points());
        }
    }

    @Test
    @Timeout(300)
    void thePlainProgramClassifiesHeldOutPointsWellAboveChance() throws Exception {
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        PrintStream out = System.out;
        System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
        try {
            PlainFitExample.main(new String[0]);
        } finally {
            System.setOut(out);
        }
        String text = printed.toString(StandardCharsets.UTF_8);
        Matcher accuracy = Pattern.compile("validation accuracy ([\\d.]+) on ").matcher(text);
        assertTrue(accuracy.find(), text);
        // 10 classes: chance is 0.1. Points the network never saw are classified as the training
        // points are only when both splits are one task.
        double value = Double.parseDouble(accuracy.group(1));
        System.out.println("held-out accuracy " + value);
        assertTrue(value > 0.5, text);
    }

    private static List<Float> boxed(float[] point) {
        List<Float> values = new ArrayList<>(point.length);
        for (float value : point) {
            values.add(value);
        }
        return values;
    }
}
