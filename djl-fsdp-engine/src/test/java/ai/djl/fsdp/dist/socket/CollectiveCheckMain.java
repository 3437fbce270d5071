package ai.djl.fsdp.dist.socket;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.dist.Work;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A rank of {@link SocketProcessGroupTest}'s jobs: runs every collective (all-to-all included) over
 * every supported element type (bfloat16 arrays made through {@link TensorMemory}, as DJL cannot
 * make them), SUM and AVG, and element counts that are zero, one, uneven and large, and checks each
 * result against the value every rank contributes, which each rank computes for itself. Exits 0
 * when all match; otherwise prints the mismatches and exits 1. With the argument {@code stream},
 * every link streams through its socket; with {@code small-chunks}, it streams 1 KiB chunks through
 * 64 KiB socket buffers; otherwise ranks pull from each other's memory where the system allows.
 */
public final class CollectiveCheckMain {

    private static final DataType[] TYPES = {
        DataType.FLOAT32, DataType.FLOAT16, DataType.BFLOAT16, DataType.INT32, DataType.INT64
    };

    /** Elements per rank: none, fewer than the ranks, uneven, and a few MiB (float32 only). */
    private static final int[] COUNTS = {0, 1, 5, 1001};

    private static final int LARGE_COUNT = 1_500_001;

    private final ProcessGroup group;
    private final NDManager manager;
    private final int rank;
    private final int size;
    private final List<String> failures = new ArrayList<>();
    private int checks;

    private CollectiveCheckMain(ProcessGroup group, NDManager manager) {
        this.group = group;
        this.manager = manager;
        rank = group.getRank();
        size = group.getSize();
    }

    public static void main(String[] args) {
        String links = args.length > 0 ? args[0] : "pulled";
        ProcessGroupOptions.Builder builder =
                ProcessGroupOptions.builder()
                        .optTimeout(Duration.ofSeconds(60))
                        .optPeerMemoryCopy("pulled".equals(links));
        if ("small-chunks".equals(links)) {
            // Many chunks per piece, and fixed socket buffers instead of the system's tuning.
            builder.optSocketChunkBytes(1024).optSocketBufferBytes(64 * 1024);
        }
        ProcessGroupOptions options = builder.build();
        CollectiveCheckMain check;
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment(), options);
                NDManager manager = NDManager.newBaseManager(group.getDevice())) {
            check = new CollectiveCheckMain(group, manager);
            check.run();
            group.barrier();
        }
        if (!check.failures.isEmpty()) {
            check.failures.forEach(System.out::println);
            System.exit(1);
        }
        System.out.println("OK " + check.checks + " checks");
        System.exit(0);
    }

    private void run() {
        for (DataType type : TYPES) {
            for (int count : COUNTS) {
                checkAll(type, count);
            }
        }
        checkAll(DataType.FLOAT32, LARGE_COUNT);
        checkInFlightTogether();
        checkInPlaceAllGather(1001);
    }

    /** FSDP's form: the input is a view of this rank's own piece of the output. */
    private void checkInPlaceAllGather(int count) {
        NDArray output = manager.zeros(new Shape((long) count * size));
        NDIndex own = new NDIndex("{}:{}", rank * count, (rank + 1) * count);
        output.set(own, contribution(DataType.FLOAT32, count));
        group.allGather(output.get(own), output);
        double[] expected = new double[count * size];
        for (int r = 0; r < size; r++) {
            System.arraycopy(values(r, count), 0, expected, r * count, count);
        }
        compare("in-place allGather", output, expected);
    }

    private void checkAll(DataType type, int count) {
        checkAllGather(type, count);
        for (ReduceOp op : ReduceOp.values()) {
            checkReduceScatter(type, count, op);
            checkAllReduce(type, count, op);
        }
        checkBroadcast(type, count, size - 1);
        checkBroadcast(type, count, 0);
        checkAllToAll(type, count);
    }

    /** Piece s of the output is rank s's piece for this rank. */
    private void checkAllToAll(DataType type, int count) {
        NDArray input = contribution(type, count * size);
        NDArray output = create(type, new double[count * size]);
        group.allToAll(input, output);
        double[] expected = new double[count * size];
        for (int s = 0; s < size; s++) {
            for (int i = 0; i < count; i++) {
                expected[s * count + i] = value(s, rank * count + i);
            }
        }
        compare("allToAll " + type + " x" + count, output, expected);
    }

    private void checkAllGather(DataType type, int count) {
        NDArray input = contribution(type, count);
        NDArray output = create(type, new double[count * size]);
        group.allGather(input, output);
        double[] expected = new double[count * size];
        for (int r = 0; r < size; r++) {
            for (int i = 0; i < count; i++) {
                expected[r * count + i] = value(r, i);
            }
        }
        compare("allGather " + type + " x" + count, output, expected);
    }

    private void checkReduceScatter(DataType type, int count, ReduceOp op) {
        NDArray input = contribution(type, count * size);
        NDArray output = create(type, new double[count]);
        group.reduceScatter(input, output, op);
        compare(
                "reduceScatter " + type + ' ' + op + " x" + count,
                output,
                reduced(type, op, rank * count, count));
    }

    private void checkAllReduce(DataType type, int count, ReduceOp op) {
        NDArray array = contribution(type, count);
        group.allReduce(array, op);
        compare("allReduce " + type + ' ' + op + " x" + count, array, reduced(type, op, 0, count));
    }

    private void checkBroadcast(DataType type, int count, int root) {
        NDArray array = contribution(type, count);
        group.broadcast(array, root);
        compare("broadcast " + type + " from " + root + " x" + count, array, values(root, count));
    }

    /** Four collectives of different kinds in flight at once, awaited after all are queued. */
    private void checkInFlightTogether() {
        int count = 4099;
        NDArray gatherInput = contribution(DataType.FLOAT32, count);
        NDArray gathered = manager.zeros(new Shape(count * size));
        NDArray scatterInput = contribution(DataType.INT64, count * size);
        NDArray scattered = manager.zeros(new Shape(count), DataType.INT64);
        NDArray reducedArray = contribution(DataType.FLOAT16, count);
        NDArray broadcastArray = contribution(DataType.INT32, count);
        List<Work> works =
                List.of(
                        group.allGatherAsync(gatherInput, gathered),
                        group.reduceScatterAsync(scatterInput, scattered, ReduceOp.AVG),
                        group.allReduceAsync(reducedArray, ReduceOp.SUM),
                        group.broadcastAsync(broadcastArray, size - 1));
        works.forEach(Work::await);
        double[] expectedGather = new double[count * size];
        for (int r = 0; r < size; r++) {
            System.arraycopy(values(r, count), 0, expectedGather, r * count, count);
        }
        compare("async allGather", gathered, expectedGather);
        compare(
                "async reduceScatter",
                scattered,
                reduced(DataType.INT64, ReduceOp.AVG, rank * count, count));
        compare("async allReduce", reducedArray, reduced(DataType.FLOAT16, ReduceOp.SUM, 0, count));
        compare("async broadcast", broadcastArray, values(size - 1, count));
    }

    /**
     * Rank {@code r}'s element {@code i}: small integers, exact in every type, different on every
     * rank.
     */
    private static double value(int r, int i) {
        return Math.floorMod(r * 31 + i * 7, 101) - 50;
    }

    private static double[] values(int r, int count) {
        double[] values = new double[count];
        for (int i = 0; i < count; i++) {
            values[i] = value(r, i);
        }
        return values;
    }

    /** This rank's contribution of {@code count} elements of {@code type}. */
    private NDArray contribution(DataType type, int count) {
        return create(type, values(rank, count));
    }

    /** An array of {@code type} holding {@code values}; DJL must never be asked for bfloat16. */
    private NDArray create(DataType type, double[] values) {
        NDArray exact = manager.create(values);
        return type == DataType.BFLOAT16
                ? TensorMemory.toBfloat16(exact)
                : exact.toType(type, false);
    }

    /**
     * The reduction of elements {@code [from, from + count)} over all ranks, rounded as the backend
     * rounds: sums of small integers are exact, AVG divides once in the type's arithmetic (float32
     * for float16 and bfloat16, truncating for integers).
     */
    private double[] reduced(DataType type, ReduceOp op, int from, int count) {
        double[] expected = new double[count];
        for (int i = 0; i < count; i++) {
            long sum = 0;
            for (int r = 0; r < size; r++) {
                sum += (long) value(r, from + i);
            }
            expected[i] = op == ReduceOp.SUM ? sum : average(type, sum);
        }
        return expected;
    }

    private double average(DataType type, long sum) {
        switch (type) {
            case FLOAT32:
                return (float) sum / size;
            case FLOAT16:
            case BFLOAT16:
                HalfFormat format = HalfFormat.valueOf(type.name());
                return format.toFloat(format.fromFloat((float) sum / size));
            default:
                return sum / size;
        }
    }

    private void compare(String what, NDArray actual, double[] expected) {
        checks++;
        // A copy through libtorch reads every element type alike, bfloat16 included.
        NDArray wide = manager.zeros(actual.getShape(), DataType.FLOAT64);
        TensorMemory.copy(actual, wide);
        double[] got = wide.toDoubleArray();
        if (got.length != expected.length) {
            failures.add(what + ": " + got.length + " elements, expected " + expected.length);
            return;
        }
        for (int i = 0; i < got.length; i++) {
            if (got[i] != expected[i]) {
                failures.add(
                        what + ": element " + i + " is " + got[i] + ", expected " + expected[i]);
                return;
            }
        }
    }
}
