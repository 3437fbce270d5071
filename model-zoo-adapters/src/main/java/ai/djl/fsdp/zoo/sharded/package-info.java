/**
 * A causal language model in the FSDP trainer, the pieces every command that runs one shares
 * ({@code finetune}, {@code generate}, {@code bench train}): how it starts sharded ({@link
 * ai.djl.fsdp.zoo.sharded.ShardedStart}), the loss it trains with ({@link
 * ai.djl.fsdp.zoo.sharded.CausalLmLoss}), and how it is saved ({@link
 * ai.djl.fsdp.zoo.sharded.SaveFormat}).
 */
package ai.djl.fsdp.zoo.sharded;
