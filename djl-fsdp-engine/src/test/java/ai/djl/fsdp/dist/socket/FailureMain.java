package ai.djl.fsdp.dist.socket;

import ai.djl.fsdp.dist.CollectiveException;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.launch.rank.FailureReport;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.time.Duration;

/**
 * A rank of {@link SocketProcessGroupTest}'s failure jobs. With {@code endless}, it all-reduces 16
 * MiB over and over (printing {@code RUNNING} once it has done one) until a collective fails; with
 * {@code mismatch}, rank 0 calls allReduce where the others call allGather; with {@code steady}, it
 * all-reduces 40 small arrays, 100 ms apart, and prints their total as {@code RESULT}; with {@code
 * busy}, rank 1 sleeps three timeouts before it joins the others' allReduce, which must then
 * succeed; with {@code silent}, rank 1 sleeps through the others' allReduce (alive: its watchdog
 * keeps beating, so the others wait for the collective timeout, not the timeout); with {@code until
 * FILE}, it all-reduces every 100 ms until FILE exists, then prints {@code DONE}. The timeout comes
 * from {@code DJL_FSDP_TIMEOUT} when set, else 90 seconds. A rank that sees the {@link
 * CollectiveException} prints {@code FAILED: <message>} and exits 3.
 */
public final class FailureMain {

    /** The exit code of a rank whose collective failed as the test expects. */
    public static final int FAILED_EXIT = 3;

    private FailureMain() {}

    public static void main(String[] args) {
        String mode = args[0];
        // For the other modes, long enough that a failure comes from the links, not the timeout.
        Duration timeout = Duration.ofSeconds("silent".equals(mode) ? 10 : 90);
        ProcessGroupOptions.Builder builder =
                ProcessGroupOptions.builder().optCollectiveTimeout(timeout);
        if (System.getenv(ProcessGroupOptions.TIMEOUT_VARIABLE) == null) {
            builder.optTimeout(Duration.ofSeconds(90));
        }
        ProcessGroupOptions options = builder.build();
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment(), options);
                NDManager manager = NDManager.newBaseManager(group.getDevice())) {
            if ("until".equals(mode)) {
                // All-reduces every 100 ms until the file args[1] exists.
                while (!java.nio.file.Files.exists(java.nio.file.Path.of(args[1]))) {
                    NDArray array = manager.ones(new Shape(10));
                    group.allReduce(array, ReduceOp.SUM);
                    System.out.println("RUNNING " + array.getFloat(0));
                    System.out.flush();
                    Thread.sleep(100);
                }
                System.out.println("DONE");
            } else if ("steady".equals(mode)) {
                double total = 0;
                for (int i = 1; i <= 40; i++) {
                    NDArray array = manager.ones(new Shape(10)).muli((group.getRank() + 1) * i);
                    group.allReduce(array, ReduceOp.SUM);
                    total += array.sum().getFloat();
                    System.out.println("RUNNING");
                    System.out.flush();
                    Thread.sleep(100);
                }
                System.out.println("RESULT " + total);
            } else if ("busy".equals(mode)) {
                // Alive and busy for three timeouts: the others must wait, not fail.
                if (group.getRank() == 1) {
                    Thread.sleep(options.getTimeout().multipliedBy(3).toMillis());
                }
                NDArray array = manager.ones(new Shape(10));
                group.allReduce(array, ReduceOp.SUM);
                System.out.println("SUM " + array.getFloat(0));
            } else if ("silent".equals(mode)) {
                if (group.getRank() == 1) {
                    // Alive but absent: the others must give up after the timeout and name it.
                    Thread.sleep(timeout.multipliedBy(3).toMillis());
                } else {
                    group.allReduce(manager.ones(new Shape(10)), ReduceOp.SUM);
                }
            } else if ("mismatch".equals(mode)) {
                NDArray array = manager.ones(new Shape(10));
                if (group.getRank() == 0) {
                    group.allReduce(array, ReduceOp.SUM);
                } else {
                    group.allGather(array, manager.zeros(new Shape(10L * group.getSize())));
                }
            } else {
                NDArray array = manager.ones(new Shape(4 << 20));
                for (int i = 0; ; i++) {
                    group.allReduce(array, ReduceOp.AVG);
                    if (i == 0) {
                        System.out.println("RUNNING");
                        System.out.flush();
                    }
                }
            }
        } catch (CollectiveException e) {
            System.out.println("FAILED: " + e.getMessage());
            System.out.flush();
            FailureReport.writeIfRequested(e.getMessage(), e);
            System.exit(FAILED_EXIT);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        System.exit(0);
    }
}
