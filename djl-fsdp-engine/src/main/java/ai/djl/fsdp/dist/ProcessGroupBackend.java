package ai.djl.fsdp.dist;

import ai.djl.Device;
import ai.djl.fsdp.rendezvous.Store;
import java.net.InetAddress;

/**
 * A collective backend that {@link ProcessGroups#init} builds a rank's process group with. The
 * backends on the class path list themselves in {@code
 * META-INF/services/ai.djl.fsdp.dist.ProcessGroupBackend}, as DJL's engines do, so that this
 * package names none of them and they depend on it alone: the socket ring ({@code
 * ai.djl.fsdp.dist.socket}) runs on the CPU, NCCL ({@code ai.djl.fsdp.dist.nccl}) on GPUs.
 */
public interface ProcessGroupBackend {

    /**
     * Returns whether this backend runs collectives on {@code device}.
     *
     * @param device the rank's device
     * @return true if {@link #create} accepts it
     */
    boolean supports(Device device);

    /**
     * Builds this rank's process group over a connected store; every rank calls it, and it returns
     * once all ranks are connected.
     *
     * @param env the job
     * @param store the job's store, connected and admitted
     * @param localAddress the address this rank is reached at
     * @param device the rank's device, one this backend {@link #supports}
     * @param options the options
     * @return the process group
     */
    ProcessGroup create(
            DistributedEnv env,
            Store store,
            InetAddress localAddress,
            Device device,
            ProcessGroupOptions options);
}
