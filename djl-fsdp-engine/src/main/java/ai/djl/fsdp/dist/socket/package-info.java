/**
 * The CPU process group: NCCL's ring algorithms over connections between neighbouring ranks.
 *
 * <p>{@link ai.djl.fsdp.dist.socket.SocketProcessGroup} queues collectives on one communication
 * thread; {@code RingCollectives} holds the algorithms (all-gather and reduce-scatter in N-1 steps,
 * all-reduce as both, a relayed broadcast), {@code Ring} moves bytes on the two links, {@code
 * RingConnector} forms the ring through the store, {@code ElementReduction} holds every per-type
 * sum and {@code HalfFormat} the float16 and bfloat16 conversions. The arrays' memory comes from
 * {@link ai.djl.fsdp.tensor.TensorMemory}, shared with the NCCL backend.
 *
 * <p>Data never leaves the arrays' own memory except into the kernel: links between machines are
 * TCP, links on one machine are Unix domain sockets, and where the system allows one process to
 * read another's memory the receiver copies straight out of the sender's array.
 */
package ai.djl.fsdp.dist.socket;
