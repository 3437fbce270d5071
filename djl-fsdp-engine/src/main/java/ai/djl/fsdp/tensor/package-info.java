/**
 * Tensors through libtorch's stable C shim, the one place the project reaches under DJL's arrays:
 * the shim itself ({@link ai.djl.fsdp.tensor.AotiTorch}), data pointers and zero-copy buffers
 * ({@link ai.djl.fsdp.tensor.TensorMemory}), element types and the bfloat16 and float16 arrays and
 * casts DJL would abort on ({@link ai.djl.fsdp.tensor.Precision}), tensors over memory the project
 * owns ({@link ai.djl.fsdp.tensor.BlobTensors}), arrays whose memory libtorch owns ({@link
 * ai.djl.fsdp.tensor.OwnedArrays}), and libtorch's process-wide state: intra-op threads ({@link
 * ai.djl.fsdp.tensor.IntraOpThreads}) and its generator alone ({@link
 * ai.djl.fsdp.tensor.TorchRandom}).
 *
 * <p>Operators built on it live in {@link ai.djl.fsdp.tensor.op}, memory that can be released and
 * pinned in {@link ai.djl.fsdp.tensor.memory}, reflection into DJL's own classes in {@link
 * ai.djl.fsdp.reflect}. Nothing else in the project calls {@code ai.djl.pytorch.jni} or reflects
 * into DJL.
 */
package ai.djl.fsdp.tensor;
