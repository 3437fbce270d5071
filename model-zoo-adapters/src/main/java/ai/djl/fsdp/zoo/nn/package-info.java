/**
 * The layers the zoo's families are built from, each shaped like the PyTorch module it stands for
 * so that parameters get Hugging Face's names: the base {@link ai.djl.fsdp.zoo.nn.HfBlock}, {@link
 * ai.djl.fsdp.zoo.nn.Linear}, {@link ai.djl.fsdp.zoo.nn.Embedding}, {@link
 * ai.djl.fsdp.zoo.nn.LayerNorm}, {@link ai.djl.fsdp.zoo.nn.ModuleList} and the pre-norm decoder
 * layer {@link ai.djl.fsdp.zoo.nn.PreNormDecoderLayer}, and the attention arithmetic the families
 * share ({@link ai.djl.fsdp.zoo.nn.Attention}) with its choice of kernel ({@link
 * ai.djl.fsdp.zoo.nn.AttentionKernel}: DJL operators or libtorch's fused attention). Depends on the
 * engine's tensor operators and the trainer module's state-dict and LoRA packages, none of the
 * zoo's.
 */
package ai.djl.fsdp.zoo.nn;
