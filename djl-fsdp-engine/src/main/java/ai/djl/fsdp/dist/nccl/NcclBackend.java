package ai.djl.fsdp.dist.nccl;

import ai.djl.Device;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroupBackend;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.rendezvous.Store;
import java.net.InetAddress;

/**
 * NCCL as the backend of every rank not on the CPU ({@link NcclProcessGroup#create} rejects a
 * device that is not a GPU, and a machine where NCCL cannot run).
 */
public final class NcclBackend implements ProcessGroupBackend {

    /** {@inheritDoc} */
    @Override
    public boolean supports(Device device) {
        return !Device.Type.CPU.equals(device.getDeviceType());
    }

    /** {@inheritDoc} */
    @Override
    public ProcessGroup create(
            DistributedEnv env,
            Store store,
            InetAddress localAddress,
            Device device,
            ProcessGroupOptions options) {
        return NcclProcessGroup.create(env, store, device, options);
    }
}
