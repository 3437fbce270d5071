package ai.djl.fsdp.dist;

import ai.djl.Device;
import ai.djl.engine.Engine;
import java.util.Arrays;
import java.util.Locale;

/**
 * The device a rank computes on: GPU {@code LOCAL_RANK} where PyTorch sees GPUs (one rank per GPU,
 * as torchrun runs them), the CPU otherwise. {@value #DEVICE_VARIABLE}{@code =cpu} keeps a GPU
 * host's ranks on the CPU; {@code =gpu} requires GPUs. {@value #RANKS_PER_GPU_VARIABLE}{@code =K}
 * (which {@code bin/fsdp launch --ranks-per-gpu K} sets) puts local rank {@code r} on GPU {@code r
 * / K}: a test layout, several ranks on one GPU.
 *
 * <p>DJL's own defaults put every rank on the same GPU ({@code Engine.defaultDevice()} is gpu(0)
 * and {@code DefaultTrainingConfig.getDevices()} lists every GPU); {@link #forTraining} is how the
 * FSDP trainer replaces them with the rank's device.
 */
public final class RankDevice {

    /**
     * The environment variable that chooses the device kind: {@code auto}, {@code cpu} or {@code
     * gpu}.
     */
    public static final String DEVICE_VARIABLE = "DJL_FSDP_DEVICE";

    /** The environment variable that puts that many local ranks on each GPU (default 1). */
    public static final String RANKS_PER_GPU_VARIABLE = "DJL_FSDP_RANKS_PER_GPU";

    private RankDevice() {}

    /**
     * Returns the device of this process's rank, counting the GPUs PyTorch sees.
     *
     * @throws IllegalArgumentException if {@value #DEVICE_VARIABLE} is not understood, asks for a
     *     GPU where there is none, or the node starts more ranks than it has GPUs
     */
    public static Device of(DistributedEnv env) {
        return of(env.getLocalRank(), env.getLocalWorldSize());
    }

    /**
     * Returns the device of local rank {@code localRank} of {@code localWorldSize} on this node, as
     * {@link #of(DistributedEnv)} does for a rank: what a launcher uses before its ranks start.
     *
     * @throws IllegalArgumentException as {@link #of(DistributedEnv)} does
     */
    public static Device of(int localRank, int localWorldSize) {
        return select(
                localRank,
                localWorldSize,
                Engine.getEngine("PyTorch").getGpuCount(),
                System.getenv(DEVICE_VARIABLE),
                ranksPerGpu(System.getenv(RANKS_PER_GPU_VARIABLE)));
    }

    /**
     * Returns how many local ranks share a GPU: {@value #RANKS_PER_GPU_VARIABLE}'s value, 1 when
     * unset.
     *
     * @param value the variable's value, null when unset
     * @throws IllegalArgumentException if it is not a whole number of at least 1
     */
    public static int ranksPerGpu(String value) {
        if (value == null || value.isBlank()) {
            return 1;
        }
        try {
            int ranks = Integer.parseInt(value.trim());
            if (ranks >= 1) {
                return ranks;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(
                RANKS_PER_GPU_VARIABLE
                        + "='"
                        + value
                        + "' is not a number of ranks per GPU: give a whole number of at least 1"
                        + " (bin/fsdp launch --ranks-per-gpu K), or unset it for one rank per GPU");
    }

    /**
     * Returns the device of local rank {@code localRank} of {@code localWorldSize} on a node with
     * {@code gpuCount} visible GPUs; {@code requested} is {@value #DEVICE_VARIABLE}'s value (null
     * when unset), {@code ranksPerGpu} the local ranks that share each GPU.
     */
    static Device select(
            int localRank, int localWorldSize, int gpuCount, String requested, int ranksPerGpu) {
        String kind =
                requested == null || requested.isBlank()
                        ? "auto"
                        : requested.trim().toLowerCase(Locale.ROOT);
        switch (kind) {
            case "cpu":
                return Device.cpu();
            case "auto":
                return gpuCount == 0
                        ? Device.cpu()
                        : gpuOf(localRank, localWorldSize, gpuCount, ranksPerGpu);
            case "gpu":
                if (gpuCount == 0) {
                    throw new IllegalArgumentException(
                            DEVICE_VARIABLE
                                    + "=gpu but PyTorch sees no GPU: build with `mvn -Pcuda`"
                                    + " (libtorch's CUDA build) on a machine with an NVIDIA driver,"
                                    + " or unset "
                                    + DEVICE_VARIABLE
                                    + " to train on the CPU");
                }
                return gpuOf(localRank, localWorldSize, gpuCount, ranksPerGpu);
            default:
                throw new IllegalArgumentException(
                        DEVICE_VARIABLE
                                + "='"
                                + requested
                                + "' is not a device kind: use auto (the default), cpu or gpu");
        }
    }

    private static Device gpuOf(int localRank, int localWorldSize, int gpuCount, int ranksPerGpu) {
        int gpu = localRank / ranksPerGpu;
        if (gpu < gpuCount) {
            return Device.gpu(gpu);
        }
        if (gpuCount == 1 && ranksPerGpu == 1) {
            // Each rank was given a GPU of its own (CUDA_VISIBLE_DEVICES per task, as Slurm's
            // --gpus-per-task=1 sets it): the one it sees. NCCL refuses two ranks on one GPU.
            return Device.gpu(0);
        }
        throw new IllegalArgumentException(
                "LOCAL_RANK="
                        + localRank
                        + " of LOCAL_WORLD_SIZE="
                        + localWorldSize
                        + (ranksPerGpu == 1 ? "" : " at " + ranksPerGpu + " ranks per GPU")
                        + " but PyTorch sees "
                        + gpuCount
                        + " GPUs: start at most "
                        + gpuCount * ranksPerGpu
                        + " ranks per node (--nproc-per-node "
                        + gpuCount * ranksPerGpu
                        + "), test several ranks on one GPU with --ranks-per-gpu, or set "
                        + DEVICE_VARIABLE
                        + "=cpu");
    }

    /**
     * Returns the one device a rank's trainer computes on, given the training configuration's
     * device list. DJL's default list (every GPU, or the CPU) gives way to the rank's device; a
     * list set explicitly must name the rank's device alone.
     *
     * @param configured the configuration's {@code getDevices()}
     * @param rankDevice the device of the rank's process group
     * @throws IllegalArgumentException if the configuration explicitly names another device
     */
    public static Device forTraining(Device[] configured, Device rankDevice) {
        return forTraining(configured, Engine.getEngine("PyTorch").getDevices(), rankDevice);
    }

    static Device forTraining(Device[] configured, Device[] engineDefaults, Device rankDevice) {
        if (configured == null
                || configured.length == 0
                || Arrays.equals(configured, engineDefaults)
                || configured.length == 1 && rankDevice.equals(configured[0])) {
            return rankDevice;
        }
        throw new IllegalArgumentException(
                "FSDP runs one device per rank, and this rank's process group runs on "
                        + rankDevice
                        + ", but the training configuration names "
                        + Arrays.toString(configured)
                        + ": leave optDevices unset (the rank's device is used) or set it to "
                        + rankDevice);
    }
}
