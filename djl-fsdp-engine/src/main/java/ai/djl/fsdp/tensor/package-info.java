/**
 * Tensor memory and every use of DJL's or libtorch's internals, each class with the reason it
 * exists: libtorch's C shim ({@link ai.djl.fsdp.tensor.AotiTorch}: data pointers; {@link
 * ai.djl.fsdp.tensor.Precision}: bfloat16 and float16 arrays and the casts DJL would abort on;
 * {@link ai.djl.fsdp.tensor.FusedAttention}: fused attention with autograd through the dispatcher;
 * {@link ai.djl.fsdp.tensor.FusedLinear}: linear with the bias inside the product, the same way;
 * {@link ai.djl.fsdp.tensor.FusedActivation}: the tanh GELU through the operator's C++ entry point;
 * {@link ai.djl.fsdp.tensor.ReleasableMemory}: parameter memory released and refilled under a
 * graph), libtorch's intra-op threads ({@link ai.djl.fsdp.tensor.IntraOpThreads}), memory libtorch
 * owns ({@link ai.djl.fsdp.tensor.OwnedArrays}), autograd beyond DJL's collector ({@link
 * ai.djl.fsdp.tensor.Autograd}), libtorch's generator alone ({@link
 * ai.djl.fsdp.tensor.TorchRandom}), and reflection into DJL's parameters ({@link
 * ai.djl.fsdp.tensor.ParameterArrays}), blocks ({@link ai.djl.fsdp.tensor.BlockChildren}) and
 * optimizers ({@link ai.djl.fsdp.tensor.OptimizerStates}). Nothing else in the project calls {@code
 * ai.djl.pytorch.jni} or reflects into DJL.
 */
package ai.djl.fsdp.tensor;
