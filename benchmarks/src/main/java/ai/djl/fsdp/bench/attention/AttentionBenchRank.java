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
 * D ITERS REPORT}. Writes a {@link Measurement} to {@code REPORT}: the median of the timed
 * forward+backward steps (after one untimed), and the peak resident set ({@code VmHWM}, reset to
 * the resident set once the inputs existed) less that resident set, in 10^6 bytes.
 */
public final class AttentionBenchRank {

    private AttentionBenchRank() {}

    /**
     * What one configuration measured.
     *
     * @param millis the median step, in milliseconds
     * @param peakMb the peak resident set the steps added, in 10^6 bytes
     * @param peakReset whether the peak was reset before the steps; if not, {@code peakMb} counts
     *     from the process's earlier peak, not the steps'
     */
    record Measurement(double millis, double peakMb, boolean peakReset) {

        /** Reads the line {@link #toString} wrote. */
        static Measurement parse(String line) {
            String[] fields = line.trim().split(" ");
            return new Measurement(
                    Double.parseDouble(fields[0]),
                    Double.parseDouble(fields[1]),
                    fields[2].equals("1"));
        }

        /** Returns {@code <millis> <peak MB> <1 if the peak was reset, else 0>}. */
        @Override
        public String toString() {
            return millis + " " + peakMb + " " + (peakReset ? 1 : 0);
        }
    }

    /**
     * Runs the configuration.
     *
     * @param args kernel, batch, heads, sequence, head width, timed steps, report file
     * @throws IOException if the report cannot be written
     */
    public static void main(String[] args) throws IOException {
        AttentionKernel kernel = AttentionKernel.of(args[0]);
        Shape shape =
                new Shape(
                        Long.parseLong(args[1]),
                        Long.parseLong(args[2]),
                        Long.parseLong(args[3]),
                        Long.parseLong(args[4]));
        Measurement measurement = measure(kernel, shape, Integer.parseInt(args[5]));
        Files.writeString(
                Path.of(args[6]), measurement + System.lineSeparator(), StandardCharsets.UTF_8);
    }

    /**
     * Times {@code iterations} forward and backward steps of {@code kernel} (after one untimed) and
     * measures the peak resident set they add, in this process.
     *
     * @param kernel the attention kernel
     * @param shape the queries', keys' and values' shape, {@code [B, H, T, D]}
     * @param iterations the timed steps, at least 1
     * @return the median step and the peak the steps added
     */
    static Measurement measure(AttentionKernel kernel, Shape shape, int iterations) {
        Engine engine = Engine.getEngine("PyTorch");
        engine.setRandomSeed(1);
        try (NDManager manager = engine.newBaseManager()) {
            NDArray[] qkv = new NDArray[3];
            for (int i = 0; i < 3; i++) {
                qkv[i] = manager.randomNormal(shape);
            }
            NDArray bias = Attention.causalBias(manager, null, shape.get(0), 0, shape.get(2));
            NDArray gradient = manager.randomNormal(shape);
            // The peak from here on: not one the process reached before (a larger earlier step, the
            // engine's start).
            long before = PeakMemory.bytes("VmRSS");
            boolean reset = PeakMemory.resetPeak();
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
            return new Measurement(millis[iterations / 2], peak, reset);
        }
    }
}
