package ai.djl.fsdp.checkpoint;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * One rank of {@link ModelStateWriterTest#everyRankFailsWithTheWritersMessage}: a full save of
 * three units, each "gathered" by an all-reduce, fails on rank 0 alone, in its transform of the
 * second unit ({@code transform}) or in opening the output ({@code open}, the directory being a
 * file). Each rank prints how many units it visited and the message it failed with.
 */
public final class ModelStateWriterRankMain {

    /** What rank 0's transform throws on the second unit. */
    static final String TRANSFORM_FAILURE = "the transform failed on unit1";

    private static final int UNITS = 3;

    private ModelStateWriterRankMain() {}

    /**
     * Runs the save on one rank of a job described by the environment.
     *
     * @param args the output directory and where rank 0 fails: {@code transform} or {@code open}
     */
    public static void main(String[] args) {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment());
                NDManager manager = NDManager.newBaseManager()) {
            int[] visited = {0};
            ModelStateWriter.GatheredUnits units =
                    visitor -> {
                        for (int i = 0; i < UNITS; i++) {
                            // Stands in for the unit's all-gather: every rank must reach it.
                            try (NDArray gathered = manager.create(new float[] {1f})) {
                                group.allReduce(gathered, ReduceOp.SUM);
                            }
                            visited[0]++;
                            visitor.visit(new GatheredUnit("unit" + i, List.of()));
                        }
                    };
            StateTransform.Entry entry = new StateTransform.Entry("t", Dtype.F32, new Shape(2));
            StateTransform transform =
                    StateTransform.of(
                            List.of(entry),
                            (unit, sink) -> {
                                if ("unit1".equals(unit.getName())) {
                                    throw new IllegalStateException(TRANSFORM_FAILURE);
                                }
                                if ("unit2".equals(unit.getName())) {
                                    sink.put("t", manager.ones(new Shape(2)));
                                }
                            });
            String outcome;
            try {
                ModelStateWriter.writeCheckpoint(
                        units, group, Path.of(args[0]), transform, Long.MAX_VALUE);
                outcome = "wrote";
            } catch (IOException | RuntimeException e) {
                outcome = "failed: " + e.getMessage();
            }
            System.out.println(
                    "rank " + group.getRank() + " visited " + visited[0] + " units; " + outcome);
        }
    }
}
