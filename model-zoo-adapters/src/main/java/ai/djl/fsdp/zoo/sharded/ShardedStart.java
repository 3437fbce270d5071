package ai.djl.fsdp.zoo.sharded;

import ai.djl.Model;
import ai.djl.fsdp.checkpoint.ParameterSource;
import ai.djl.fsdp.lora.AdapterSource;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.qlora.QuantizingSource;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.WrapPolicy;
import ai.djl.fsdp.wrap.WrapPlanner;
import ai.djl.fsdp.wrap.WrapTarget;
import ai.djl.fsdp.zoo.PretrainedModel;
import ai.djl.fsdp.zoo.hf.CheckpointShardSource;
import ai.djl.fsdp.zoo.hf.ConfigJson;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.fsdp.zoo.hf.QuantizationConfig;
import ai.djl.fsdp.zoo.hf.VocabularyResize;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.util.Pair;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;

/**
 * How a language model starts sharded, the one path {@code finetune} and {@code bench train} take:
 * the model is never initialized whole. Its block tree is built without values, LoRA's adapters are
 * added to it, and the trainer initializes it one unit at a time on the rank's device, keeping only
 * this rank's shards (read straight from the checkpoint's files when there is one; the frozen base
 * in the compute type under mixed precision). No rank ever holds the whole model.
 *
 * @param trainer the initialized trainer
 * @param largestUnitElements the parameter elements of the largest unit, adapters included: the
 *     root (everything outside the other units) or one of the units its wrap policy chose
 */
public record ShardedStart(FsdpTrainer trainer, long largestUnitElements) {

    /**
     * Builds the trainer once the model's tree is complete.
     *
     * @param <M> the model's type
     */
    @FunctionalInterface
    public interface TrainerFactory<M extends PretrainedModel> {

        /**
         * Creates the trainer (not yet initialized).
         *
         * @param model the model, its block set
         * @param lm the language model, adapters added
         * @param source the checkpoint's shards, or null for fresh values
         * @return the trainer
         */
        FsdpTrainer newTrainer(Model model, M lm, ParameterSource source);
    }

    /**
     * Sets {@code lm} as the model's block, adds the adapters, and initializes a trainer over it
     * unit by unit. A collective: every rank calls it.
     *
     * @param <M> the model's type
     * @param model the model
     * @param lm the language model, built without values ({@code Models.forCheckpoint} for a
     *     checkpoint, else the architecture's {@code newModel})
     * @param checkpoint the Hugging Face checkpoint directory to read the values from, or null for
     *     fresh values
     * @param lora the adapters to add, or null
     * @param factory builds the trainer
     * @return the initialized trainer and the size of its largest unit
     * @throws IOException if the checkpoint cannot be read
     */
    public static <M extends PretrainedModel> ShardedStart initialize(
            Model model, M lm, Path checkpoint, LoraConfig lora, TrainerFactory<M> factory)
            throws IOException {
        return initialize(model, lm, checkpoint, lora, null, factory);
    }

    /**
     * Sets {@code lm} as the model's block, adds the adapters, and initializes a trainer over it
     * unit by unit, the adapters' values read from a PEFT adapter directory (each rank reading only
     * its shards of them, as of the base). A collective: every rank calls it.
     *
     * @param <M> the model's type
     * @param model the model
     * @param lm the language model, built without values ({@code Models.forCheckpoint} for a
     *     checkpoint, else the architecture's {@code newModel})
     * @param checkpoint the Hugging Face checkpoint directory to read the values from, or null for
     *     fresh values
     * @param lora the adapters to add, or null
     * @param adapterValues the PEFT adapter directory whose {@code adapter_model.safetensors} holds
     *     the adapters' values, or null for fresh adapters
     * @param factory builds the trainer
     * @return the initialized trainer and the size of its largest unit
     * @throws IOException if the checkpoint or the adapters cannot be read
     * @throws IllegalArgumentException if the checkpoint or the adapters do not fit the model
     */
    public static <M extends PretrainedModel> ShardedStart initialize(
            Model model,
            M lm,
            Path checkpoint,
            LoraConfig lora,
            Path adapterValues,
            TrainerFactory<M> factory)
            throws IOException {
        return initialize(model, lm, checkpoint, null, lora, adapterValues, factory);
    }

    /**
     * Sets {@code lm} as the model's block, adds the adapters, and initializes a trainer over it
     * unit by unit, as {@link #initialize(Model, PretrainedModel, Path, LoraConfig, Path,
     * TrainerFactory)} does, for a model whose vocabulary is larger than the checkpoint's: the
     * token embedding and an untied head grow as {@code resize} says (each rank making only the
     * added rows its shards hold). A collective: every rank calls it.
     *
     * @param <M> the model's type
     * @param model the model
     * @param lm the language model of the grown vocabulary, built without values
     * @param checkpoint the Hugging Face checkpoint directory to read the values from, or null for
     *     fresh values
     * @param resize how the checkpoint's vocabulary grows, or null when it does not
     * @param lora the adapters to add, or null
     * @param adapterValues the PEFT adapter directory holding the adapters' values, or null
     * @param factory builds the trainer
     * @return the initialized trainer and the size of its largest unit
     * @throws IOException if the checkpoint or the adapters cannot be read
     * @throws IllegalArgumentException if the checkpoint or the adapters do not fit the model
     */
    public static <M extends PretrainedModel> ShardedStart initialize(
            Model model,
            M lm,
            Path checkpoint,
            VocabularyResize resize,
            LoraConfig lora,
            Path adapterValues,
            TrainerFactory<M> factory)
            throws IOException {
        return initialize(model, lm, checkpoint, resize, null, lora, adapterValues, factory);
    }

    /**
     * Sets {@code lm} as the model's block, quantizes its base to 4 bits, adds the adapters, and
     * initializes a trainer over it unit by unit, as {@link #initialize(Model, PretrainedModel,
     * Path, VocabularyResize, LoraConfig, Path, TrainerFactory)} does: each quantized projection's
     * float weight is drawn (fresh values) or read from the checkpoint's shard ranges and quantized
     * as its unit is initialized, so no rank holds the whole float base. A pre-quantized checkpoint
     * (a {@code quantization_config} in its {@code config.json}, the 4-bit tensors bitsandbytes
     * saves) is a 4-bit base as that block describes it, whatever {@code quantization} says: each
     * rank reads its shards' packed bytes and scales as stored, nothing is quantized again. A
     * collective.
     *
     * @param <M> the model's type
     * @param model the model
     * @param lm the language model, built without values
     * @param checkpoint the Hugging Face checkpoint directory (float weights), or null for fresh
     *     values
     * @param resize how the checkpoint's vocabulary grows, or null when it does not
     * @param quantization the 4-bit base, or null for a float base
     * @param lora the adapters to add, or null
     * @param adapterValues the PEFT adapter directory holding the adapters' values, or null
     * @param factory builds the trainer
     * @return the initialized trainer and the size of its largest unit
     * @throws IOException if the checkpoint or the adapters cannot be read
     * @throws IllegalArgumentException if the checkpoint or the adapters do not fit the model
     */
    public static <M extends PretrainedModel> ShardedStart initialize(
            Model model,
            M lm,
            Path checkpoint,
            VocabularyResize resize,
            QuantizationConfig quantization,
            LoraConfig lora,
            Path adapterValues,
            TrainerFactory<M> factory)
            throws IOException {
        if (adapterValues != null && lora == null) {
            throw new IllegalArgumentException("adapter values need the adapters' configuration");
        }
        model.setBlock(lm);
        QuantizationConfig stored =
                checkpoint == null || !Files.isRegularFile(ConfigJson.file(checkpoint))
                        ? null
                        : QuantizationConfig.read(checkpoint);
        if (stored != null) {
            // Its 4-bit layers are in place before the checkpoint is matched, which reads them.
            stored.apply(lm);
        }
        try (CheckpointShardSource shards =
                        checkpoint == null
                                ? null
                                : HfCheckpoint.shardSource(lm, checkpoint, resize);
                AdapterSource adapters =
                        adapters(lm, stored == null ? quantization : null, lora, adapterValues)) {
            // The quantized layers read the checkpoint's float weights, matched before they were
            // put in place, and quantize them as they are read.
            ParameterSource base =
                    shards == null || quantization == null || stored != null
                            ? shards
                            : new QuantizingSource(lm, shards);
            // The adapters' own first: what they saved of the base (a grown embedding and head,
            // trained with them) replaces the checkpoint's.
            ParameterSource source =
                    base == null ? adapters : adapters == null ? base : adapters.orElse(base);
            FsdpTrainer trainer = factory.newTrainer(model, lm, source);
            // Counted while the tree still holds the blocks themselves, not their units.
            long largestUnit = largestUnitElements(lm, trainer.getFsdpConfig().getWrapPolicy());
            try {
                trainer.initialize(new Shape(1, 1));
            } catch (RuntimeException e) {
                try {
                    trainer.close();
                } catch (RuntimeException closing) {
                    e.addSuppressed(closing);
                }
                throw e;
            }
            return new ShardedStart(trainer, largestUnit);
        }
    }

    /**
     * Quantizes the base and adds the adapters, after the checkpoint's source has matched the base
     * parameters to the files; returns the source of the adapters' saved values, or null.
     */
    private static AdapterSource adapters(
            PretrainedModel lm, QuantizationConfig quantization, LoraConfig lora, Path values)
            throws IOException {
        if (quantization != null) {
            quantization.apply(lm);
        }
        if (lora != null) {
            Lora.apply(lm, lora);
        }
        return values == null ? null : AdapterSource.open(lm, values);
    }

    /**
     * Returns the resident bytes a rank needs at the least: its model state (its shards, the frozen
     * ones in their stored type, and the trainable ones' gradients and optimizer state, counted
     * after a step) plus the full parameters of the largest unit while it is gathered in the
     * compute type.
     *
     * @return the ideal's bytes
     */
    public long idealBytes() {
        int computeBytes = trainer.getFsdpConfig().getMixedPrecision().param().getBytes();
        return trainer.getMemoryStats().modelStateBytes() + largestUnitElements * computeBytes;
    }

    private static long largestUnitElements(PretrainedModel lm, WrapPolicy policy) {
        long unitElements = 0;
        long largestUnit = 0;
        for (WrapTarget target : WrapPlanner.plan(lm, policy)) {
            long elements = elements(target.block());
            unitElements += elements;
            largestUnit = Math.max(largestUnit, elements);
        }
        return Math.max(elements(lm) - unitElements, largestUnit);
    }

    /** The block's parameter elements, each shared parameter once. */
    private static long elements(Block block) {
        Set<String> seen = new HashSet<>();
        long elements = 0;
        for (Pair<String, Parameter> pair : block.getParameters()) {
            if (seen.add(pair.getValue().getId())) {
                elements += pair.getValue().getShape().size();
            }
        }
        return elements;
    }
}
