package ai.djl.fsdp.zoo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.safetensors.SafetensorsFile;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import com.google.gson.JsonArray;
import java.io.IOException;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/** What the tests against the committed PyTorch references share: their inputs and the bound. */
public final class ReferenceChecks {

    private ReferenceChecks() {}

    /**
     * Returns the int64 array {@code [rows, columns]} of a JSON array of equally long rows.
     *
     * @param manager the manager of the result
     * @param rows the rows, such as a reference's {@code input_ids}
     * @return the array
     */
    public static NDArray ids(NDManager manager, JsonArray rows) {
        int batch = rows.size();
        int length = rows.get(0).getAsJsonArray().size();
        long[] ids = new long[batch * length];
        for (int b = 0; b < batch; b++) {
            for (int t = 0; t < length; t++) {
                ids[b * length + t] = rows.get(b).getAsJsonArray().get(t).getAsLong();
            }
        }
        return manager.create(ids).reshape(batch, length);
    }

    /**
     * Asserts that an array is within {@code tolerance} of the expected one, relative to the
     * largest expected magnitude, and returns that relative difference.
     *
     * @param what what is compared, for the message
     * @param actual the computed array
     * @param expected the reference's array
     * @param tolerance the bound
     * @return the largest difference relative to the largest expected magnitude
     */
    public static double relativeDifference(
            String what, NDArray actual, NDArray expected, double tolerance) {
        assertEquals(expected.getShape(), actual.getShape(), what + " shape");
        double scale = expected.abs().max().getFloat();
        double relative = TestModels.maxDiff(actual, expected) / scale;
        assertTrue(
                relative <= tolerance,
                String.format(Locale.ROOT, "%s differs by %.3g relative", what, relative));
        return relative;
    }

    /**
     * Asserts that the model's parameters are those the reference holds a gradient of ({@code
     * grad.<name>}) and that each gradient is within {@code tolerance}; returns the largest
     * relative difference.
     *
     * @param what the case, for the messages
     * @param model the model after backward
     * @param reference the reference's expected tensors
     * @param manager the manager to read them into
     * @param tolerance the bound
     * @return the largest relative difference of any gradient
     * @throws IOException if the reference cannot be read
     */
    public static double gradients(
            String what,
            Block model,
            SafetensorsFile reference,
            NDManager manager,
            double tolerance)
            throws IOException {
        Map<String, Parameter> parameters = StateDict.parameters(model);
        Set<String> expectedNames = new TreeSet<>();
        for (String tensor : reference.getNames()) {
            if (tensor.startsWith("grad.")) {
                expectedNames.add(tensor.substring("grad.".length()));
            }
        }
        assertEquals(expectedNames, new TreeSet<>(parameters.keySet()), what + " parameters");
        double worst = 0;
        for (Map.Entry<String, Parameter> p : parameters.entrySet()) {
            worst =
                    Math.max(
                            worst,
                            relativeDifference(
                                    what + " gradient of " + p.getKey(),
                                    p.getValue().getArray().getGradient(),
                                    reference.read(manager, "grad." + p.getKey()),
                                    tolerance));
        }
        return worst;
    }
}
