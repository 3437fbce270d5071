/**
 * The public configuration types that {@link ai.djl.fsdp.trainer.FsdpConfig} sets and the runtime
 * follows, as FSDP2's {@code _fsdp_api}: the element types of a step ({@link
 * ai.djl.fsdp.config.MixedPrecision}, FSDP2's {@code MixedPrecisionPolicy}), how a step is
 * scheduled ({@link ai.djl.fsdp.config.ExecutionOptions}, {@code fully_shard}'s arguments) and
 * which units are recomputed in backward ({@link ai.djl.fsdp.config.ActivationCheckpointing}). They
 * sit below both the trainer and the runtime so that each may use them and neither depends on the
 * other's side.
 */
package ai.djl.fsdp.config;
