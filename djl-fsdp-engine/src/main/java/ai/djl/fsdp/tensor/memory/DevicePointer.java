package ai.djl.fsdp.tensor.memory;

import org.bytedeco.javacpp.Pointer;

/**
 * A raw address as a JavaCPP pointer: a tensor's device memory or a CUDA stream, which the bindings
 * take as {@link Pointer}s. It owns nothing; the address stays valid as long as the tensor or
 * stream it came from.
 */
public final class DevicePointer extends Pointer {

    /**
     * Wraps an address.
     *
     * @param address the address
     */
    public DevicePointer(long address) {
        this.address = address;
    }
}
