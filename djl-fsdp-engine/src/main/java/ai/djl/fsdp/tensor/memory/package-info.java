/**
 * Memory the project manages beside libtorch's allocator: parameter memory released and refilled
 * under a graph ({@link ai.djl.fsdp.tensor.memory.ReleasableMemory}, on the host and through the
 * CUDA driver's virtual memory), page-locked host memory and the copies to a device it allows
 * ({@link ai.djl.fsdp.tensor.memory.PinnedMemory}, {@link
 * ai.djl.fsdp.tensor.memory.HostToDeviceCopy}), and the CUDA runtime and libraries that back them
 * ({@link ai.djl.fsdp.tensor.memory.CudaRuntime}, {@link ai.djl.fsdp.tensor.memory.CudaLibraries}).
 */
package ai.djl.fsdp.tensor.memory;
