/**
 * PyTorch's dotted {@code state_dict} names for a DJL Block tree ({@link
 * ai.djl.fsdp.statedict.StateDict}): the one place that turns DJL's position-prefixed,
 * underscore-joined child keys into names such as {@code transformer.h.0.attn.c_attn.weight}, and
 * writes values into parameters' arrays in place, so every holder of an array (a tied head, a flat
 * buffer it is a view of) sees them. Hugging Face checkpoints, PEFT adapters and FSDP's own
 * checkpoints are keyed by these names, so the wrapping, optimizer, checkpoint, LoRA and trainer
 * packages and the model zoo all name modules and parameters through it. Depends on DJL alone.
 */
package ai.djl.fsdp.statedict;
