package ai.djl.fsdp.checkpoint;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.fsdp.internal.param.FlatParameter;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.initializer.Initializer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link FlatParameter#create} with a source: each shard is read from a source, only its own
 * elements.
 */
class ShardLoaderTest {

    private static Parameter parameter(NDManager manager, String name, Shape shape) {
        Parameter parameter =
                Parameter.builder()
                        .setName(name)
                        .setType(Parameter.Type.WEIGHT)
                        .optShape(shape)
                        .optInitializer(Initializer.ZEROS)
                        .build();
        parameter.initialize(manager, DataType.FLOAT32);
        return parameter;
    }

    @Test
    void eachShardReadsOnlyItsElementsAndFallsBackToTheParametersArray() {
        try (NDManager manager = NDManager.newBaseManager()) {
            Parameter a = parameter(manager, "a", new Shape(2, 2)); // from the source: 0..3
            Parameter b = parameter(manager, "b", new Shape(3)); // not in the source: its array
            b.getArray().set(manager.create(new float[] {4, 5, 6}).toByteBuffer());
            List<String> reads = new ArrayList<>();
            ParameterSource source =
                    (scope, parameter, from, to) -> {
                        if (parameter != a) {
                            return null;
                        }
                        reads.add(from + ":" + to);
                        return scope.arange((float) from, (float) to);
                    };
            // 7 elements over 3 ranks, shards of 3: [0 1 2] [3 4 5] [6 pad pad].
            float[][] expected = {{0, 1, 2}, {3, 4, 5}, {6, 0, 0}};
            List<List<String>> expectedReads = List.of(List.of("0:3"), List.of("3:4"), List.of());
            for (int rank = 0; rank < 3; rank++) {
                reads.clear();
                FlatParameter flat =
                        new ShardLoader(3, rank, manager, null, source)
                                .load("u", false, List.of(a, b));
                assertArrayEquals(expected[rank], flat.getShard().toFloatArray(), "rank " + rank);
                assertEquals(expectedReads.get(rank), reads, "rank " + rank + " reads");
            }
        }
    }

    @Test
    void aLargeParameterIsReadInPiecesOfBoundedSize() {
        try (NDManager manager = NDManager.newBaseManager()) {
            long numel = 2 * ShardLoader.PIECE + 6;
            Parameter large = parameter(manager, "large", new Shape(numel));
            List<String> reads = new ArrayList<>();
            ParameterSource source =
                    (scope, parameter, from, to) -> {
                        reads.add(from + ":" + to);
                        return scope.arange(from, to).toType(DataType.FLOAT32, false);
                    };
            // Two ranks: rank 1's shard is the second half, PIECE + 3 elements.
            FlatParameter flat =
                    new ShardLoader(2, 1, manager, null, source).load("u", false, List.of(large));
            long start = ShardLoader.PIECE + 3;
            assertEquals(
                    List.of(
                            start + ":" + (start + ShardLoader.PIECE),
                            (start + ShardLoader.PIECE) + ":" + numel),
                    reads);
            float[] shard = flat.getShard().toFloatArray();
            assertEquals(ShardLoader.PIECE + 3, shard.length);
            for (int i = 0; i < shard.length; i++) {
                if (shard[i] != start + i) {
                    throw new AssertionError("element " + i + " is " + shard[i]);
                }
            }
        }
    }
}
