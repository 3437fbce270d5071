package ai.djl.fsdp.dist;

import ai.djl.Device;
import ai.djl.fsdp.rendezvous.Store;
import ai.djl.fsdp.rendezvous.TcpStore;
import ai.djl.fsdp.rendezvous.TorchStore;
import java.net.InetAddress;
import java.util.ServiceLoader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Creates the {@link ProcessGroup} of a job, the entry point of every distributed program. */
public final class ProcessGroups {

    private static final Logger logger = LoggerFactory.getLogger(ProcessGroups.class);

    private ProcessGroups() {}

    /**
     * Joins the job described by {@code env} with the default options, on the rank's device ({@link
     * RankDevice#of}): NCCL on GPU {@code LOCAL_RANK} where there are GPUs, the socket ring on the
     * CPU otherwise.
     *
     * @see #init(DistributedEnv, ProcessGroupOptions)
     */
    public static ProcessGroup init(DistributedEnv env) {
        return init(env, ProcessGroupOptions.defaults());
    }

    /**
     * Joins the job described by {@code env}: connects to the store at {@code MASTER_ADDR:
     * MASTER_PORT} (hosting it on rank 0, unless the launcher's agent hosts a PyTorch TCPStore
     * there: {@link DistributedEnv#isAgentStore()}) and builds the backend for the options' device.
     * Every rank must call it; it returns once all ranks are connected.
     *
     * @throws CollectiveException if the ranks cannot be connected within the options' timeout
     * @throws UnsupportedOperationException if the device is a GPU and NCCL cannot run here
     */
    public static ProcessGroup init(DistributedEnv env, ProcessGroupOptions options) {
        if (env.getWorldSize() > 1 && env.getJobToken().isEmpty()) {
            logger.warn(
                    "{} is not set: any process that reaches {}:{} can join this job's store",
                    DistributedEnv.JOB_TOKEN_VARIABLE,
                    env.getMasterAddr(),
                    env.getMasterPort());
        }
        if (env.isAgentStore()) {
            TorchStore store =
                    TorchStore.builder(env.getMasterAddr(), env.getMasterPort())
                            .optKeyPrefix("djl-fsdp/" + env.getRunId() + '/')
                            .optTimeout(options.getTimeout())
                            .build();
            return createBackend(env, store, store.getLocalAddress(), options);
        }
        TcpStore store =
                TcpStore.builder(env.getMasterAddr(), env.getMasterPort())
                        .optHostServer(env.getRank() == 0)
                        .optToken(env.getJobToken())
                        .optRunId(env.getRunId())
                        .optTimeout(options.getTimeout())
                        .build();
        try {
            StoreAdmission.admit(store, env);
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
        return createBackend(env, store, store.getLocalAddress(), options);
    }

    /**
     * The one place where the device chooses the backend (the first on the class path that {@link
     * ProcessGroupBackend#supports supports} it); closes the store if that fails.
     */
    private static ProcessGroup createBackend(
            DistributedEnv env,
            Store store,
            InetAddress localAddress,
            ProcessGroupOptions options) {
        try {
            Device device = options.getDevice().orElseGet(() -> RankDevice.of(env));
            return backendFor(device).create(env, store, localAddress, device, options);
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
    }

    private static ProcessGroupBackend backendFor(Device device) {
        for (ProcessGroupBackend backend : ServiceLoader.load(ProcessGroupBackend.class)) {
            if (backend.supports(device)) {
                return backend;
            }
        }
        throw new IllegalArgumentException(
                "No process group backend on the class path runs on "
                        + device
                        + " (META-INF/services/"
                        + ProcessGroupBackend.class.getName()
                        + ")");
    }
}
