package ai.djl.fsdp.dist.nccl;

import ai.djl.Device;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.dist.RankDevice;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.rendezvous.TcpStore;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.util.Arrays;

/**
 * A rank of {@link NcclProcessGroupTest}: joins the NCCL group on its rank's GPU ({@code
 * RankDevice}) and checks every collective against values it computes itself; any mismatch throws,
 * so the rank exits non-zero. Rank {@code r} contributes {@code r + 1 + i} at index {@code i}.
 */
public final class NcclRankCheck {

    private static final int SHARD = 1000;

    private NcclRankCheck() {}

    public static void main(String[] args) {
        DistributedEnv env = DistributedEnv.fromEnvironment();
        int rank = env.getRank();
        int size = env.getWorldSize();
        Device gpu = RankDevice.of(env);
        try (TcpStore store =
                        TcpStore.builder(env.getMasterAddr(), env.getMasterPort())
                                .optHostServer(rank == 0)
                                .optToken(env.getJobToken())
                                .build();
                NcclProcessGroup group =
                        NcclProcessGroup.create(env, store, gpu, ProcessGroupOptions.defaults());
                NDManager manager = NDManager.newBaseManager(gpu, "PyTorch")) {
            NDArray shard = manager.arange(0f, SHARD, 1f).add(rank + 1);
            NDArray gathered = manager.zeros(new Shape((long) SHARD * size));
            group.allGather(shard, gathered);
            float[] expectedGather = new float[SHARD * size];
            for (int r = 0; r < size; r++) {
                for (int i = 0; i < SHARD; i++) {
                    expectedGather[r * SHARD + i] = r + 1 + i;
                }
            }
            check("allGather", expectedGather, gathered);

            NDArray full = manager.arange(0f, (float) SHARD * size, 1f).add(rank + 1);
            float rankSum = size * (size + 1) / 2f;
            float[] expectedSum = new float[SHARD];
            for (int i = 0; i < SHARD; i++) {
                expectedSum[i] = rankSum + size * (float) (rank * SHARD + i);
            }
            NDArray reduced = manager.zeros(new Shape(SHARD));
            group.reduceScatter(full, reduced, ReduceOp.SUM);
            check("reduceScatter SUM", expectedSum, reduced);
            group.reduceScatter(full, reduced, ReduceOp.AVG);
            float[] expectedAvg = expectedSum.clone();
            for (int i = 0; i < SHARD; i++) {
                expectedAvg[i] /= size;
            }
            check("reduceScatter AVG", expectedAvg, reduced);

            NDArray summed = shard.duplicate();
            group.allReduce(summed, ReduceOp.SUM);
            float[] expectedAllReduce = new float[SHARD];
            for (int i = 0; i < SHARD; i++) {
                expectedAllReduce[i] = rankSum + size * (float) i;
            }
            check("allReduce SUM", expectedAllReduce, summed);

            NDArray bf16 = TensorMemory.toBfloat16(manager.ones(new Shape(SHARD)));
            group.allReduce(bf16, ReduceOp.SUM);
            float[] expectedCount = new float[SHARD];
            Arrays.fill(expectedCount, size);
            check("bfloat16 allReduce", expectedCount, bf16.toType(DataType.FLOAT32, false));

            NDArray broadcast = manager.full(new Shape(SHARD), (float) rank);
            group.broadcast(broadcast, size - 1);
            float[] expectedBroadcast = new float[SHARD];
            Arrays.fill(expectedBroadcast, size - 1);
            check("broadcast", expectedBroadcast, broadcast);

            group.barrier();
        }
    }

    private static void check(String collective, float[] expected, NDArray actual) {
        float[] values = actual.toFloatArray();
        if (!Arrays.equals(expected, values)) {
            throw new AssertionError(
                    collective
                            + " gave "
                            + Arrays.toString(Arrays.copyOf(values, 8))
                            + "..., expected "
                            + Arrays.toString(Arrays.copyOf(expected, 8))
                            + "...");
        }
    }
}
