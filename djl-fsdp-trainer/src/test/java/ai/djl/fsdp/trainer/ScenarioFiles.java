package ai.djl.fsdp.trainer;

import ai.djl.fsdp.trainer.metrics.SentBytes;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Scenarios on a command line and results in files, between a test and its rank processes. */
final class ScenarioFiles {

    private ScenarioFiles() {}

    static String format(Scenario s) {
        return s.strategy()
                + ","
                + s.accumulation()
                + ","
                + s.maxGradNorm()
                + ","
                + s.freeze()
                + ","
                + s.adam()
                + ","
                + s.steps()
                + ","
                + s.dropout()
                + ","
                + s.checkpointing();
    }

    static Scenario parse(String text, int worldSize) {
        String[] f = text.split(",");
        return new Scenario(
                ShardingStrategy.valueOf(f[0]),
                worldSize,
                Integer.parseInt(f[1]),
                Float.parseFloat(f[2]),
                Boolean.parseBoolean(f[3]),
                Boolean.parseBoolean(f[4]),
                Integer.parseInt(f[5]),
                Float.parseFloat(f[6]),
                f[7]);
    }

    static void write(Path file, Scenario.Result result) throws IOException {
        List<String> lines = new ArrayList<>();
        StringBuilder losses = new StringBuilder("losses");
        for (double loss : result.losses()) {
            losses.append(' ').append(loss);
        }
        lines.add(losses.toString());
        ShardingStats s = result.stats();
        lines.add(
                "stats "
                        + s.parameterBytes()
                        + ' '
                        + s.gradientBytes()
                        + ' '
                        + s.optimizerStateBytes()
                        + ' '
                        + s.unshardedParameterBytes()
                        + ' '
                        + s.sentBytesLastStep()
                        + ' '
                        + s.sentAcrossBytesLastStep()
                        + ' '
                        + s.waitNanosLastStep()
                        + ' '
                        + s.sentByKindLastStep().allGather()
                        + ' '
                        + s.sentByKindLastStep().reduceScatter()
                        + ' '
                        + s.sentByKindLastStep().allReduce()
                        + ' '
                        + s.sentByKindLastStep().other());
        StringBuilder arrays = new StringBuilder("arrays");
        for (int count : result.liveArrays()) {
            arrays.append(' ').append(count);
        }
        lines.add(arrays.toString());
        if (result.unitsAfterForward() != null) {
            lines.add("units " + String.join(" ", result.unitsAfterForward()));
        }
        for (Map.Entry<String, float[]> entry : result.parameters().entrySet()) {
            StringBuilder line = new StringBuilder("param ").append(entry.getKey());
            for (float value : entry.getValue()) {
                line.append(' ').append(value);
            }
            lines.add(line.toString());
        }
        Files.write(file, lines);
    }

    static Scenario.Result read(Path file) throws IOException {
        double[] losses = null;
        ShardingStats stats = null;
        int[] liveArrays = null;
        String[] unitsAfterForward = null;
        Map<String, float[]> parameters = new LinkedHashMap<>();
        for (String line : Files.readAllLines(file)) {
            String[] f = line.split(" ");
            switch (f[0]) {
                case "losses":
                    losses = new double[f.length - 1];
                    for (int i = 1; i < f.length; i++) {
                        losses[i - 1] = Double.parseDouble(f[i]);
                    }
                    break;
                case "stats":
                    stats =
                            new ShardingStats(
                                    Long.parseLong(f[1]),
                                    Long.parseLong(f[2]),
                                    Long.parseLong(f[3]),
                                    Long.parseLong(f[4]),
                                    Long.parseLong(f[5]),
                                    Long.parseLong(f[6]),
                                    Long.parseLong(f[7]),
                                    new SentBytes(
                                            Long.parseLong(f[8]),
                                            Long.parseLong(f[9]),
                                            Long.parseLong(f[10]),
                                            Long.parseLong(f[11])));
                    break;
                case "arrays":
                    liveArrays = new int[f.length - 1];
                    for (int i = 1; i < f.length; i++) {
                        liveArrays[i - 1] = Integer.parseInt(f[i]);
                    }
                    break;
                case "units":
                    unitsAfterForward = Arrays.copyOfRange(f, 1, f.length);
                    break;
                case "param":
                    float[] values = new float[f.length - 2];
                    for (int i = 2; i < f.length; i++) {
                        values[i - 2] = Float.parseFloat(f[i]);
                    }
                    parameters.put(f[1], values);
                    break;
                default:
                    throw new IOException("Unexpected line in " + file + ": " + line);
            }
        }
        return new Scenario.Result(losses, parameters, stats, liveArrays, unitsAfterForward);
    }
}
