package ai.djl.fsdp.dist;

import java.util.Optional;

/**
 * The ranks of a job laid out in two dimensions for hybrid sharding (PyTorch's 2-D device mesh
 * {@code (replicate, shard)}, FSDP1's {@code HYBRID_SHARD}): shard groups of {@code S} consecutive
 * ranks, each holding one copy of the model sharded {@code S} ways, and replicate groups of the
 * ranks that hold the same shard index in each shard group. With the ranks numbered node by node,
 * as torchrun, Slurm and {@code bin/fsdp launch} number them, and {@code S} the ranks of a node,
 * every all-gather and reduce-scatter stays inside a node and only the replicate groups'
 * all-reduces cross between nodes.
 *
 * <p>A flat mesh ({@link #flat}) is the ordinary layout: one shard group of every rank, no
 * replicas.
 */
public final class ShardingMesh implements AutoCloseable {

    private final ProcessGroup world;
    private final ProcessGroup shardGroup;
    private final ProcessGroup replicateGroup;

    private ShardingMesh(ProcessGroup world, ProcessGroup shardGroup, ProcessGroup replicateGroup) {
        this.world = world;
        this.shardGroup = shardGroup;
        this.replicateGroup = replicateGroup;
    }

    /**
     * Returns the layout of one shard group of every rank of {@code world}.
     *
     * @param world the job's group
     * @return the mesh
     */
    public static ShardingMesh flat(ProcessGroup world) {
        return new ShardingMesh(world, world, null);
    }

    /**
     * Splits {@code world} into shard groups of {@code shardSize} consecutive ranks and the
     * replicate groups across them (a collective: every rank calls it with the same size). A shard
     * group of every rank needs no split and has no replicas.
     *
     * @param world the job's group
     * @param shardSize the ranks of one shard group, which divides the world size
     * @return the mesh, owning the subgroups it made
     * @throws IllegalArgumentException if {@code shardSize} does not divide the world size
     */
    public static ShardingMesh hybrid(ProcessGroup world, int shardSize) {
        int size = world.getSize();
        if (shardSize < 1 || shardSize > size || size % shardSize != 0) {
            throw new IllegalArgumentException(
                    "Hybrid sharding needs shard groups of equal size: a shard group of "
                            + shardSize
                            + " ranks does not divide the "
                            + size
                            + " ranks of the job. Give a shard group size that divides "
                            + size
                            + " (by default the ranks of one node, LOCAL_WORLD_SIZE)");
        }
        if (shardSize == size) {
            return flat(world);
        }
        int rank = world.getRank();
        ProcessGroup shard = world.split("shard", rank / shardSize);
        try {
            return new ShardingMesh(world, shard, world.split("replicate", rank % shardSize));
        } catch (RuntimeException e) {
            shard.close();
            throw e;
        }
    }

    /** Returns the job's group: every rank. */
    public ProcessGroup getWorld() {
        return world;
    }

    /** Returns the ranks that shard one copy of the model among themselves. */
    public ProcessGroup getShardGroup() {
        return shardGroup;
    }

    /**
     * Returns the ranks that hold the same shard as this one in the other shard groups; empty in a
     * flat mesh.
     */
    public Optional<ProcessGroup> getReplicateGroup() {
        return Optional.ofNullable(replicateGroup);
    }

    /** Returns whether the mesh has more than one shard group. */
    public boolean isHybrid() {
        return replicateGroup != null;
    }

    /** Returns how the mesh is laid out, such as {@code 2 shard groups of 2 ranks}. */
    public String describe() {
        int groups = world.getSize() / shardGroup.getSize();
        return groups
                + " shard group"
                + (groups == 1 ? "" : "s")
                + " of "
                + shardGroup.getSize()
                + " rank"
                + (shardGroup.getSize() == 1 ? "" : "s");
    }

    /** Closes the subgroups the mesh made; the job's group stays open. */
    @Override
    public void close() {
        if (replicateGroup != null) {
            try {
                replicateGroup.close();
            } finally {
                shardGroup.close();
            }
        }
    }
}
