/**
 * Operators DJL lacks or runs slowly, called through libtorch's dispatcher so that autograd records
 * them: the dispatcher call itself ({@link ai.djl.fsdp.tensor.op.DispatcherCall}), fused attention
 * ({@link ai.djl.fsdp.tensor.op.FusedAttention}), linear with the bias inside the product ({@link
 * ai.djl.fsdp.tensor.op.FusedLinear}), the tanh GELU through the operator's C++ entry point ({@link
 * ai.djl.fsdp.tensor.op.FusedActivation}), in-place copies and products ({@link
 * ai.djl.fsdp.tensor.op.InPlace}), arithmetic with a scalar made on the array's device ({@link
 * ai.djl.fsdp.tensor.op.ScalarOps}), and autograd beyond DJL's collector ({@link
 * ai.djl.fsdp.tensor.op.Autograd}). Beside them, one kernel composed of those operators with its
 * own backward: cross-entropy over a vocabulary too wide to hold, a chunk of rows at a time, from
 * logits or fused with the head's product from hidden states ({@link
 * ai.djl.fsdp.tensor.op.ChunkedCrossEntropy}).
 */
package ai.djl.fsdp.tensor.op;
