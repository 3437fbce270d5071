package ai.djl.fsdp.zoo.sharded;

import ai.djl.fsdp.checkpoint.StateTransform;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.lora.LoraState;
import ai.djl.fsdp.qlora.MergedOutput;
import ai.djl.fsdp.qlora.PrequantizedOutput;
import ai.djl.fsdp.qlora.QuantizedLinear;
import ai.djl.fsdp.quant.QuantConfig;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.zoo.PretrainedModel;
import ai.djl.fsdp.zoo.hf.ConfigJson;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.fsdp.zoo.hf.QuantizationConfig;
import ai.djl.nn.Block;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * Saves a model trained in the FSDP trainer as Hugging Face files: the whole model with its LoRA
 * adapters merged ({@link #merged}), the base model without them ({@link #base}), or the adapters
 * alone in PEFT's layout ({@link #adapters}). Each save is a collective that gathers one FSDP unit
 * at a time through {@link FsdpTrainer#saveFullState}, so no rank holds the whole model; rank 0
 * writes. A model held whole in one process is saved by {@link HfCheckpoint#save}.
 */
public final class ShardedSave {

    private ShardedSave() {}

    /**
     * Saves a model trained with FSDP as a plain Hugging Face checkpoint directory, {@code
     * config.json} and {@code model.safetensors}, its LoRA adapters (if any) merged into the base
     * weights: one FSDP unit at a time, so no rank holds the whole model (see {@link
     * LoraState#merged}). A collective: every rank calls it; rank 0 writes.
     *
     * @param trainer the trainer of {@code model}
     * @param model the model, adapted or not
     * @param directory the directory (created if needed) on rank 0
     * @throws IOException if writing fails
     */
    public static void merged(FsdpTrainer trainer, PretrainedModel model, Path directory)
            throws IOException {
        merged(trainer, model, directory, Dtype.F32, HfCheckpoint.DEFAULT_MAX_SHARD_BYTES);
    }

    /**
     * Saves a model trained with FSDP as a plain Hugging Face checkpoint directory, its LoRA
     * adapters (if any) merged, as {@link #merged(FsdpTrainer, PretrainedModel, Path)} does, with
     * its floating tensors stored as {@code floatType} (each cast as its unit is written) and split
     * into {@code model-0000N-of-0000M.safetensors} files of at most {@code maxShardBytes} with
     * {@code model.safetensors.index.json} when it is larger. A collective: every rank calls it;
     * rank 0 writes.
     *
     * <p>A 4-bit base ({@link ai.djl.fsdp.qlora.Qlora}) is decoded, weight by weight, its adapters
     * merged into the decoded weights, and stored in {@code floatType} as a plain float checkpoint
     * ({@link MergedOutput}); rank 0 gets back a line saying how far it lies from the trained
     * model.
     *
     * @param trainer the trainer of {@code model}
     * @param model the model, adapted or not
     * @param directory the directory (created if needed) on rank 0
     * @param floatType {@link Dtype#F32}, {@link Dtype#BF16} or {@link Dtype#F16}
     * @param maxShardBytes the most tensor bytes one file holds
     * @return for a 4-bit base, on rank 0, what the output holds and how far it lies from the
     *     trained 4-bit weights plus the adapters' updates; else empty
     * @throws IOException if writing fails
     */
    public static Optional<String> merged(
            FsdpTrainer trainer,
            PretrainedModel model,
            Path directory,
            Dtype floatType,
            long maxShardBytes)
            throws IOException {
        MergedOutput output = MergedOutput.of(model, floatType);
        full(trainer, model, output.getState(), directory, floatType, maxShardBytes, null);
        return Optional.ofNullable(output.describe());
    }

    /**
     * Saves the base model under a LoRA model trained with FSDP, without its adapters, as a Hugging
     * Face checkpoint directory the adapters can be put on again (for a base that had no weights
     * before the run, the only copy of what the adapters were trained on), written as {@link
     * #merged(FsdpTrainer, PretrainedModel, Path, Dtype, long)} writes. A base held in 4 bits is
     * saved pre-quantized, its packed codes and scales as they are ({@link PrequantizedOutput}),
     * with {@code quantization} as its {@code config.json}'s {@code quantization_config}, the
     * layout transformers saves a model loaded with {@code load_in_4bit} in and {@link
     * ai.djl.fsdp.qlora.PrequantizedSource} loads. A collective: every rank calls it; rank 0
     * writes.
     *
     * @param trainer the trainer of {@code model}
     * @param model the model, adapted or not
     * @param directory the directory (created if needed) on rank 0
     * @param floatType the floating tensors' type: {@link Dtype#F32}, {@link Dtype#BF16} or {@link
     *     Dtype#F16}
     * @param maxShardBytes the most tensor bytes one file holds
     * @param quantization the 4-bit base's settings, its storage type the packed bytes' label; null
     *     for a float base
     * @throws IOException if writing fails
     * @throws IllegalArgumentException before anything is written, where {@code quantization} does
     *     not describe the model's base: null for a base held in 4 bits, given for a float base, or
     *     a code, block size or nesting other than a 4-bit projection's
     */
    public static void base(
            FsdpTrainer trainer,
            PretrainedModel model,
            Path directory,
            Dtype floatType,
            long maxShardBytes,
            QuantizationConfig quantization)
            throws IOException {
        requireDescribes(quantization, model);
        StateTransform state =
                quantization == null
                        ? LoraState.base(model).withFloatsAs(floatType)
                        : PrequantizedOutput.of(model, floatType, quantization.getStorageDtype());
        full(trainer, model, state, directory, floatType, maxShardBytes, quantization);
    }

    /**
     * Refuses a {@code quantization_config} that does not describe the model's base, which holds
     * 4-bit weights where it has {@link QuantizedLinear} projections: either would write a
     * checkpoint its config cannot load.
     */
    private static void requireDescribes(QuantizationConfig quantization, PretrainedModel model) {
        boolean quantized = false;
        for (Map.Entry<String, Block> entry : StateDict.modules(model).entrySet()) {
            if (!(entry.getValue() instanceof QuantizedLinear layer)) {
                continue;
            }
            quantized = true;
            if (quantization == null) {
                throw new IllegalArgumentException(
                        "the base is held in 4 bits ("
                                + entry.getKey()
                                + " is quantized) but no quantization config was given: pass the"
                                + " QuantizationConfig it was quantized with, so config.json"
                                + " describes its packed weights");
            }
            String held = describe(layer.getConfig());
            String given = describe(quantization.getQuant());
            if (!held.equals(given)) {
                throw new IllegalArgumentException(
                        "the quantization config says "
                                + given
                                + " but "
                                + entry.getKey()
                                + " is held as "
                                + held
                                + ": pass the QuantizationConfig the base was quantized with");
            }
        }
        if (quantization != null && !quantized) {
            throw new IllegalArgumentException(
                    "a quantization config ("
                            + quantization.describe()
                            + ") was given but the base holds no 4-bit weights: pass null to save"
                            + " a float base");
        }
    }

    private static String describe(QuantConfig quant) {
        return quant.getQuantType().getName()
                + (quant.isNested() ? " nested" : "")
                + " in blocks of "
                + quant.getBlockSize();
    }

    private static void full(
            FsdpTrainer trainer,
            PretrainedModel model,
            StateTransform state,
            Path directory,
            Dtype floatType,
            long maxShardBytes,
            QuantizationConfig quantization)
            throws IOException {
        if (trainer.getModel().getBlock() != model) {
            throw new IllegalArgumentException("the trainer does not train this model");
        }
        // The writer makes the directory: a failure there is rank 0's inside the collective save,
        // which every rank then reports, not one the other ranks would wait on.
        trainer.saveFullState(directory, state, maxShardBytes);
        if (trainer.getRank() == 0) {
            ConfigJson.write(
                    model.getConfig(), directory, SaveFormat.torchName(floatType), quantization);
        }
    }

    /**
     * Saves the LoRA adapters of a model trained with FSDP in PEFT's layout ({@code
     * adapter_config.json}, {@code adapter_model.safetensors}), every rank's part of every adapter,
     * gathering one FSDP unit at a time. A collective: every rank calls it; rank 0 writes.
     *
     * @param trainer the trainer of the adapted model
     * @param config the configuration the adapters were made with
     * @param directory the adapter directory (created if needed) on rank 0
     * @throws IOException if writing fails
     */
    public static void adapters(FsdpTrainer trainer, LoraConfig config, Path directory)
            throws IOException {
        Block root = trainer.getModel().getBlock();
        trainer.saveFullState(
                directory.resolve(Lora.WEIGHTS_FILE), LoraState.adapters(root, config));
        // After the collective save: a failure here is rank 0's alone, and no rank waits on it.
        if (trainer.getRank() == 0) {
            Lora.saveConfig(root, config, directory);
        }
    }
}
