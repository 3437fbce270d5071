package ai.djl.fsdp.dist.socket;

import ai.djl.Device;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroupBackend;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.rendezvous.Store;
import java.net.InetAddress;

/** The socket ring as the backend of CPU ranks. */
public final class SocketBackend implements ProcessGroupBackend {

    /** {@inheritDoc} */
    @Override
    public boolean supports(Device device) {
        return Device.Type.CPU.equals(device.getDeviceType());
    }

    /** {@inheritDoc} */
    @Override
    public ProcessGroup create(
            DistributedEnv env,
            Store store,
            InetAddress localAddress,
            Device device,
            ProcessGroupOptions options) {
        return SocketProcessGroup.connect(env, store, localAddress, options);
    }
}
