package ai.djl.fsdp.spark;

import java.io.Serializable;

/**
 * What a barrier task sends back to the driver: its rank and its function's result.
 *
 * @param rank the rank
 * @param value the function's result
 * @param <T> the result's type
 */
record RankResult<T>(int rank, T value) implements Serializable {}
