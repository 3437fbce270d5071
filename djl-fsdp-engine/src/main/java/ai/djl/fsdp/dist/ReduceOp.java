package ai.djl.fsdp.dist;

/** How {@code reduceScatter} and {@code allReduce} combine the ranks' elements. */
public enum ReduceOp {
    /** The element-wise sum. */
    SUM,
    /** The element-wise mean: the sum divided by the world size. */
    AVG
}
