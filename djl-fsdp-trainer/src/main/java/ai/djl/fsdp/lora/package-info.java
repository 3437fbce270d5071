/**
 * LoRA on any DJL Block tree, in PEFT's layout so that adapters move between this project and PEFT:
 * {@link ai.djl.fsdp.lora.Lora} puts a {@link ai.djl.fsdp.lora.LoraLinear} (a frozen base plus a
 * trainable low-rank update) in place of each targeted {@link ai.djl.fsdp.lora.LinearProjection},
 * counts what trains, merges the adapters into the base weights, and saves or loads them as {@code
 * adapter_config.json} and {@code adapter_model.safetensors}. {@link ai.djl.fsdp.lora.LoraConfig}
 * holds PEFT's settings and defaults.
 *
 * <p>Under FSDP, {@link ai.djl.fsdp.lora.AdapterSource} feeds each rank the shards of saved
 * adapters and {@link ai.djl.fsdp.lora.LoraState} writes the merged model or the adapters alone,
 * unit by unit, through the checkpoint package. Names come from {@link
 * ai.djl.fsdp.statedict.StateDict} and files from {@code ai.djl.fsdp.safetensors}; the model zoo's
 * projections implement {@code LinearProjection}, and {@code finetune} and {@code generate} use the
 * rest.
 */
package ai.djl.fsdp.lora;
