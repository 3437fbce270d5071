/**
 * The NCCL backend of {@link ai.djl.fsdp.dist.ProcessGroup}, for ranks on GPUs.
 *
 * <p>The NCCL and CUDA runtime bindings are Bytedeco's; their natives come with the Maven profile
 * {@code -Pcuda}. Nothing here loads them until a group is created, so CPU builds carry these
 * classes without ever touching CUDA.
 *
 * <p>Collectives run on PyTorch's current CUDA stream on the array's device, the stream DJL's
 * operators run on: an operator queued after a collective already sees its result, and a collective
 * sees every operator queued before it. {@link ai.djl.fsdp.dist.Work#await()} is needed only before
 * the host reads the result (it waits on a CUDA event recorded behind the collective).
 */
package ai.djl.fsdp.dist.nccl;
