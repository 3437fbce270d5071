package ai.djl.fsdp.bench.attention;

import ai.djl.engine.Engine;
import ai.djl.fsdp.zoo.finetune.report.PeakMemory;
import ai.djl.fsdp.zoo.nn.Attention;
import ai.djl.fsdp.zoo.nn.AttentionKernel;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * One configuration of {@link AttentionBenchCommand}, in a process of its own: {@code KERNEL B H T
 * D ITERS REPORT}. Writes {@code <median ms> <peak MB added>} to {@code REPORT}: the median of the
 * timed forward+backward steps (after one untimed), and the peak resident set ({@code VmHWM}) less
 * the resident set once the inputs existed, in 10^6 bytes.
 */
public final class AttentionBenchRank {

    private AttentionBenchRank() {}

    /**
     * Runs the configuration.
     *
     * @param args kernel, batch, heads, sequence, head width, timed steps, report file
     * @throws IOException if the report cannot be written
     */
    public static void main(String[] args) throws IOException {
        AttentionKernel kernel = AttentionKernel.of(args[0]);
        long batch = Long.parseLong(args[1]);
        long heads = Long.parseLong(args[2]);
        long sequence = Long.parseLong(args[3]);
        long headDim = Long.parseLong(args[4]);
        int iterations = Integer.parseInt(args[5]);
        Engine engine = Engine.getEngine("PyTorch");
        engine.setRandomSeed(1);
        try (NDManager manager = engine.newBaseManager()) {
            Shape shape = new Shape(batch, heads, sequence, headDim);
            NDArray[] qkv = new NDArray[3];
            for (int i = 0; i < 3; i++) {
                qkv[i] = manager.randomNormal(shape);
            }
            NDArray bias = Attention.causalBias(manager, null, batch, 0, sequence);
            NDArray gradient = manager.randomNormal(shape);
            long before = PeakMemory.bytes("VmRSS");
            double[] millis = new double[iterations];
            for (int step = -1; step < iterations; step++) {
                long start = System.nanoTime();
                try (NDManager scope = manager.newSubManager();
                        GradientCollector collector = engine.newGradientCollector()) {
                    // Leaves in the step's scope, so that the graph and gradients die with it.
                    NDArray[] leaves = new NDArray[3];
                    for (int i = 0; i < 3; i++) {
                        leaves[i] = qkv[i].duplicate();
                        leaves[i].attach(scope);
                        leaves[i].setRequiresGradient(true);
                    }
                    NDArray y =
                            Attention.scaledDotProduct(
                                    kernel, leaves[0], leaves[1], leaves[2], bias, 0, true);
                    collector.backward(y.mul(gradient).sum());
                }
                if (step >= 0) {
                    millis[step] = (System.nanoTime() - start) / 1e6;
                }
            }
            Arrays.sort(millis);
            double peak = (PeakMemory.bytes("VmHWM") - before) / 1e6;
            String line = millis[iterations / 2] + " " + peak + System.lineSeparator();
            Files.writeString(Path.of(args[6]), line, StandardCharsets.UTF_8);
        }
    }
}
