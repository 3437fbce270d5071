/**
 * The NCCL backend of {@link ai.djl.fsdp.dist.ProcessGroup}, for ranks on GPUs.
 *
 * <p>The NCCL and CUDA runtime bindings are Bytedeco's; their JNI glue comes with the Maven profile
 * {@code -Pcuda} (CUDA 12) or {@code -Pcuda13} (CUDA 13), and the NCCL and CUDA runtime libraries
 * it links to from the system or {@code cuda-redist} ({@link
 * ai.djl.fsdp.tensor.memory.CudaLibraries} names whichever is missing). Nothing here loads them
 * until a group is created, so CPU builds carry these classes without ever touching CUDA.
 *
 * <p>Collectives run on two streams of the group's own (all-gathers on one, reductions on the
 * other), each ordered after the caller's current stream (DJL's operators) by a CUDA event; {@link
 * ai.djl.fsdp.dist.Work#await()} makes the caller's stream wait for the collective's event, so the
 * host never waits per unit and the next unit's gather overlaps the current unit's compute. A
 * watchdog thread aborts the communicator on NCCL's asynchronous error or past the timeout; it is
 * stopped and joined before the group finalizes, destroys or aborts the communicator ({@code
 * Communicator} is the seam that lets tests record that order without a GPU).
 */
package ai.djl.fsdp.dist.nccl;
