package ai.djl.fsdp.dist.socket;

import ai.djl.fsdp.dist.CollectiveException;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.dist.Work;
import ai.djl.fsdp.launch.rank.FailureReport;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.util.Arrays;

/**
 * A rank of {@link SubgroupTest}'s 4-rank jobs, split as 2 shard groups of 2 (colors {@code rank /
 * 2}) and 2 replicate groups (colors {@code rank % 2}). With {@code check}, every collective runs
 * in both kinds of subgroup and the job's group alike, and a reduce-scatter in the shard group
 * hands its piece to an all-reduce across the replicate group; subgroups are split again (each
 * shard group its own way at once, and 4 -> 2 -> 1); each rank prints {@code OK} or exits 1 naming
 * what differed. With {@code endless}, ranks all-reduce in their replicate group until a collective
 * fails, printing {@code RUNNING} after the first, then {@code FAILED: <message>} (exit 3).
 */
public final class SubgroupMain {

    private SubgroupMain() {}

    public static void main(String[] args) {
        ProcessGroupOptions options = ProcessGroupOptions.builder().build();
        try (ProcessGroup world = ProcessGroups.init(DistributedEnv.fromEnvironment(), options);
                NDManager manager = NDManager.newBaseManager(world.getDevice())) {
            int rank = world.getRank();
            ProcessGroup shard = world.split("shard", rank / 2);
            ProcessGroup replicate = world.split("replicate", rank % 2);
            if ("endless".equals(args[0])) {
                NDArray array = manager.ones(new Shape(1 << 20));
                for (int i = 0; ; i++) {
                    replicate.allReduce(array, ReduceOp.AVG);
                    if (i == 0) {
                        System.out.println("RUNNING");
                        System.out.flush();
                    }
                }
            }
            check(shard.getRank() == rank % 2 && shard.getSize() == 2, "shard group place");
            check(replicate.getRank() == rank / 2 && replicate.getSize() == 2, "replicate place");
            try {
                world.split("shard", -1);
                check(false, "a negative color must be refused");
            } catch (IllegalArgumentException expected) {
                // refused before anything is exchanged
            }
            // A second split of the same name is a group of its own: every rank together.
            ProcessGroup everyone = world.split("shard", 0);
            NDArray count = manager.create(new float[] {1f});
            everyone.allReduce(count, ReduceOp.SUM);
            check(count.getFloat(0) == 4f && everyone.getSize() == 4, "a second split");
            everyone.close();

            // Subgroups split again, each its own way at the same time: shard group {0, 1} into
            // singletons, {2, 3} whole; then every shard and replicate group whole (one color in
            // all of them: their keys differ by parent), and a pair down to singletons (4 -> 2 ->
            // 1).
            boolean first = rank / 2 == 0;
            try (ProcessGroup nested = shard.split("nested", first ? shard.getRank() : 0)) {
                NDArray sum = manager.create(new float[] {rank + 1f});
                nested.allReduce(sum, ReduceOp.SUM);
                check(
                        nested.getSize() == (first ? 1 : 2)
                                && sum.getFloat(0) == (first ? rank + 1f : 7f),
                        "a shard group split its own way: size "
                                + nested.getSize()
                                + ", sum "
                                + sum.getFloat(0));
            }
            try (ProcessGroup pair = shard.split("again", 0);
                    ProcessGroup across2 = replicate.split("again", 0);
                    ProcessGroup single = pair.split("single", pair.getRank())) {
                NDArray sum = manager.create(new float[] {rank + 1f});
                pair.allReduce(sum, ReduceOp.SUM);
                check(sum.getFloat(0) == (first ? 3f : 7f), "a shard group split whole");
                NDArray sumAcross = manager.create(new float[] {rank + 1f});
                across2.allReduce(sumAcross, ReduceOp.SUM);
                check(
                        sumAcross.getFloat(0) == (rank % 2 == 0 ? 4f : 6f),
                        "a replicate group split whole");
                NDArray own = manager.create(new float[] {rank + 1f});
                single.allReduce(own, ReduceOp.SUM);
                check(
                        single.getSize() == 1 && own.getFloat(0) == rank + 1f,
                        "4 -> 2 -> 1: size " + single.getSize() + ", sum " + own.getFloat(0));
            }

            // All-reduce in each kind of group: shard groups sum {0,1} and {2,3}.
            NDArray value = manager.create(new float[] {rank + 1f});
            shard.allReduce(value, ReduceOp.SUM);
            check(value.getFloat(0) == (rank / 2 == 0 ? 3f : 7f), "shard all-reduce");
            NDArray across = manager.create(new float[] {rank + 1f});
            replicate.allReduce(across, ReduceOp.SUM);
            check(across.getFloat(0) == (rank % 2 == 0 ? 4f : 6f), "replicate all-reduce");

            // All-gather in the replicate group, in its rank order.
            NDArray gathered = manager.zeros(new Shape(2), DataType.INT32);
            replicate.allGather(manager.create(new int[] {rank}), gathered);
            check(
                    Arrays.equals(gathered.toIntArray(), new int[] {rank % 2, rank % 2 + 2}),
                    "replicate all-gather " + Arrays.toString(gathered.toIntArray()));

            // Broadcast from the shard group's rank 1.
            NDArray broadcast = manager.create(new float[] {rank});
            shard.broadcast(broadcast, 1);
            check(broadcast.getFloat(0) == (rank / 2) * 2 + 1, "shard broadcast");
            shard.barrier();
            replicate.barrier();

            // Hybrid reduction: the global mean of 8 elements per rank, piece by piece.
            float[] local = new float[8];
            for (int i = 0; i < local.length; i++) {
                local[i] = rank * 10 + i;
            }
            NDArray gradient = manager.create(local);
            NDArray piece = manager.zeros(new Shape(4));
            Work scattered = shard.reduceScatterAsync(gradient, piece, ReduceOp.AVG);
            replicate.allReduceAsync(piece, ReduceOp.AVG, scattered).await();
            float[] mean = new float[4];
            for (int i = 0; i < 4; i++) {
                int element = shard.getRank() * 4 + i;
                mean[i] = 15f + element; // the mean over ranks of rank * 10 + element
            }
            check(
                    Arrays.equals(piece.toFloatArray(), mean),
                    "hybrid reduction " + Arrays.toString(piece.toFloatArray()));

            // The job's group still works beside its subgroups, and a closed subgroup refuses.
            NDArray total = manager.create(new float[] {1f});
            world.allReduce(total, ReduceOp.SUM);
            check(total.getFloat(0) == 4f, "world all-reduce");
            shard.close();
            try {
                shard.allReduce(manager.create(new float[] {1f}), ReduceOp.SUM);
                check(false, "a closed subgroup must refuse collectives");
            } catch (CollectiveException closed) {
                check(closed.getMessage().contains("subgroup shard"), closed.getMessage());
            }
            world.barrier();
            System.out.println("OK rank " + rank);
        } catch (CollectiveException e) {
            System.out.println("FAILED: " + e.getMessage());
            System.out.flush();
            FailureReport.writeIfRequested(e.getMessage(), e);
            System.exit(FailureMain.FAILED_EXIT);
        }
        System.exit(0);
    }

    private static void check(boolean condition, String what) {
        if (!condition) {
            System.out.println("MISMATCH: " + what);
            System.out.flush();
            System.exit(1);
        }
    }
}
