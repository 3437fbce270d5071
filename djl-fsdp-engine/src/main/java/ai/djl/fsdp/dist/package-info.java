/**
 * Process groups and their collectives, the API every distributed part of the project uses: the
 * {@link ai.djl.fsdp.dist.ProcessGroup} and its {@link ai.djl.fsdp.dist.Work}, who this rank is
 * ({@link ai.djl.fsdp.dist.DistributedEnv}, read from torchrun's or Slurm's variables) and its
 * device ({@link ai.djl.fsdp.dist.RankDevice}), the entry point that joins a job ({@link
 * ai.djl.fsdp.dist.ProcessGroups}), subgroups and the 2-D mesh of hybrid sharding ({@link
 * ai.djl.fsdp.dist.ShardingMesh}).
 *
 * <p>The backends depend on this package and it names none of them: each lists itself as a {@link
 * ai.djl.fsdp.dist.ProcessGroupBackend} in {@code META-INF/services} ({@code
 * ai.djl.fsdp.dist.socket} on the CPU, {@code ai.djl.fsdp.dist.nccl} on GPUs).
 */
package ai.djl.fsdp.dist;
