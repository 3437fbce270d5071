package ai.djl.fsdp.bench;

import ai.djl.Device;
import ai.djl.fsdp.dist.CollectiveException;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.ndarray.NDManager;

/**
 * A peer rank of {@link CollectivesBenchmark}: it runs one collective over and over, in step with
 * the benchmark thread (rank 0), which decides how many runs there are. When rank 0 closes the
 * group the next run fails and the peer exits.
 *
 * <p>Arguments: the collective's label ({@code all_gather}, ...) and the larger buffer's size in
 * bytes; the job comes from the environment the {@code Launcher} sets.
 */
public final class CollectivesBenchPeer {

    private CollectivesBenchPeer() {}

    /**
     * The heap a rank needs for a collective on {@code bytes} bytes: the larger buffer, its Java
     * copy for filling, and the copy it checks, room for a few of them plus DJL.
     *
     * @param bytes the collective's size in bytes
     * @return the heap in MiB, for {@code -Xmx<n>m}
     */
    static long heapMegabytes(long bytes) {
        return 256 + 4 * bytes / (1 << 20);
    }

    /**
     * Runs the peer until rank 0 leaves.
     *
     * @param args the collective's label and the size in bytes
     */
    public static void main(String[] args) {
        Collective collective = Collective.ofLabel(args[0]);
        long elements = Long.parseLong(args[1]) / Float.BYTES;
        DistributedEnv env = DistributedEnv.fromEnvironment();
        try (ProcessGroup group = ProcessGroups.init(env, CollectivesBenchmark.groupOptions());
                NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            Collective.Run run = collective.prepare(group, manager, elements);
            while (true) {
                run.run();
            }
        } catch (CollectiveException e) {
            // Rank 0 closed the group: the benchmark is over.
        }
    }
}
