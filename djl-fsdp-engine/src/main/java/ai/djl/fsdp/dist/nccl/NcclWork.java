package ai.djl.fsdp.dist.nccl;

import ai.djl.Device;
import ai.djl.fsdp.dist.Work;
import ai.djl.fsdp.tensor.memory.CudaRuntime;
import org.bytedeco.cuda.cudart.CUevent_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.global.cudart;

/**
 * A collective queued on one of the group's NCCL streams, tracked by an event recorded right behind
 * it. {@link #await()} makes the caller's current CUDA stream (where DJL's operators run) wait for
 * that event, without blocking the host; the watchdog and host waits poll it. The event is released
 * as soon as the collective is seen to be done.
 */
final class NcclWork implements Work, QueuedCollective {

    private final String name;
    private final Device device;
    private final NcclWatchdog watchdog;
    private final long queuedNanos;
    private CUevent_st event;

    /** Records the event behind the collective just queued on {@code stream} and watches it. */
    NcclWork(String name, Device device, CUstream_st stream, NcclWatchdog watchdog) {
        this.name = name;
        this.device = device;
        this.watchdog = watchdog;
        event = NcclStreams.recordEvent(stream);
        queuedNanos = System.nanoTime();
        watchdog.watch(this);
    }

    /**
     * Orders the calling thread's current stream on the group's GPU after the collective: every
     * operator queued there from now on sees its result, and memory freed from now on (DJL closing
     * the arrays) is reused only after the collective has read and written it. The host goes on at
     * once; a collective that never finishes is aborted by the watchdog.
     *
     * @throws ai.djl.fsdp.dist.CollectiveException if the communicator has failed
     */
    @Override
    public synchronized void await() {
        watchdog.check();
        if (event == null) {
            return;
        }
        NcclStreams.waitFor(compute(), event);
    }

    /**
     * Makes {@code stream} (another group's communication stream) wait on the GPU for this
     * collective, so that a collective queued there next reads its result; neither the host nor the
     * caller's stream waits. A collective already done orders nothing.
     *
     * @throws ai.djl.fsdp.dist.CollectiveException if this collective's communicator has failed
     */
    synchronized void orderBefore(CUstream_st stream) {
        watchdog.check();
        if (event != null) {
            NcclStreams.waitFor(stream, event);
        }
    }

    @Override
    public boolean isDone() {
        watchdog.check();
        return poll();
    }

    /** Blocks the host until the collective has finished, or the watchdog reports a failure. */
    void awaitOnHost() {
        watchdog.awaitOnHost(this);
    }

    /** Returns whether the collective has finished, releasing its event once it has. */
    @Override
    public synchronized boolean poll() {
        if (event == null) {
            return true;
        }
        int result = cudart.cudaEventQuery(event);
        if (result == cudart.cudaErrorNotReady) {
            return false;
        }
        cudart.cudaEventDestroy(event);
        event = null;
        NcclStatus.CUDA.check(result, "cudaEventQuery after " + name);
        return true;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public long ageNanos() {
        return System.nanoTime() - queuedNanos;
    }

    private CUstream_st compute() {
        NcclStatus.CUDA.setDevice(device.getDeviceId());
        return CudaRuntime.currentStream(device);
    }
}
