/**
 * A causal language model in the FSDP trainer, the pieces every command that runs one shares
 * ({@code finetune}, {@code generate}, {@code bench train}): how it starts sharded ({@link
 * ai.djl.fsdp.zoo.sharded.ShardedStart}), the loss it trains with ({@link
 * ai.djl.fsdp.zoo.sharded.CausalLmLoss}), and how it is saved as Hugging Face files ({@link
 * ai.djl.fsdp.zoo.sharded.ShardedSave}: merged, base or adapters, one unit at a time) in which
 * layout and element type ({@link ai.djl.fsdp.zoo.sharded.SaveFormat}).
 */
package ai.djl.fsdp.zoo.sharded;
