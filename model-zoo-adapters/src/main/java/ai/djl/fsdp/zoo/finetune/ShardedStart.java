package ai.djl.fsdp.zoo.finetune;

import ai.djl.Model;
import ai.djl.fsdp.checkpoint.ParameterSource;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.hf.CheckpointShardSource;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.util.Pair;
import java.io.IOException;
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
 * @param largestUnitElements the parameter elements of the largest unit: the root (everything
 *     outside the decoder layers) or one decoder layer, adapters included
 */
public record ShardedStart(FsdpTrainer trainer, long largestUnitElements) {

    /** Builds the trainer once the model's tree is complete. */
    @FunctionalInterface
    public interface TrainerFactory {

        /**
         * Creates the trainer (not yet initialized).
         *
         * @param model the model, its block set
         * @param lm the language model, adapters added
         * @param source the checkpoint's shards, or null for fresh values
         * @return the trainer
         */
        FsdpTrainer newTrainer(Model model, CausalLM lm, ParameterSource source);
    }

    /**
     * Sets {@code lm} as the model's block, adds the adapters, and initializes a trainer over it
     * unit by unit. A collective: every rank calls it.
     *
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
    public static ShardedStart initialize(
            Model model, CausalLM lm, Path checkpoint, LoraConfig lora, TrainerFactory factory)
            throws IOException {
        model.setBlock(lm);
        try (CheckpointShardSource shards =
                checkpoint == null ? null : HfCheckpoint.shardSource(lm, checkpoint)) {
            // Adapters come after the source has matched the base parameters to the files.
            if (lora != null) {
                Lora.apply(lm, lora);
            }
            // Counted while the tree still holds the layers themselves, not their units.
            long largestUnit = largestUnitElements(lm);
            FsdpTrainer trainer = factory.newTrainer(model, lm, shards);
            try {
                trainer.initialize(new Shape(1, 1));
            } catch (RuntimeException e) {
                trainer.close();
                throw e;
            }
            return new ShardedStart(trainer, largestUnit);
        }
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

    private static long largestUnitElements(CausalLM lm) {
        long layerElements = 0;
        long largestLayer = 0;
        for (Block block : StateDict.modules(lm).values()) {
            if (lm.decoderLayerClass().isInstance(block)) {
                long elements = elements(block);
                layerElements += elements;
                largestLayer = Math.max(largestLayer, elements);
            }
        }
        return Math.max(elements(lm) - layerElements, largestLayer);
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
