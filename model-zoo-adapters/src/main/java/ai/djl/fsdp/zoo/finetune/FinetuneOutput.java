package ai.djl.fsdp.zoo.finetune;

import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.zoo.PretrainedModel;
import ai.djl.fsdp.zoo.finetune.args.FinetuneArguments;
import ai.djl.fsdp.zoo.finetune.output.OutputDirectory;
import ai.djl.fsdp.zoo.finetune.report.RunReport;
import ai.djl.fsdp.zoo.hf.QuantizationConfig;
import ai.djl.fsdp.zoo.sharded.SaveFormat;
import ai.djl.fsdp.zoo.sharded.ShardedSave;
import java.io.IOException;
import java.nio.file.Path;
import java.util.function.Consumer;

/**
 * What {@code finetune} saves once it has trained: the model (with LoRA, the adapters and the
 * merged model in {@code merged/} unless {@code --save_merged_model False}, and with {@code
 * --save_base_model} the base in {@code base/}: pre-quantized where it was held in 4 bits), the
 * tokenizer and the run's metrics, curves and summary. Each model is saved one FSDP unit at a time,
 * so no rank ever holds the whole model; every rank takes part in the gathers, and rank 0 writes
 * into a staging directory that replaces the output at the end.
 */
final class FinetuneOutput {

    private final FinetuneArguments args;
    private final boolean rankZero;
    private final Dtype saveDtype;
    private final long maxShardBytes;
    private final QuantizationConfig quantized;
    private final Consumer<String> print;

    /**
     * Describes a run's output.
     *
     * @param args the run's flags
     * @param rankZero whether this rank writes
     * @param saveDtype the saved models' floating type
     * @param maxShardBytes the most tensor bytes one saved file holds
     * @param quantized the 4-bit base as the run computed with it, or null for a float base
     * @param print where rank 0's lines go
     */
    FinetuneOutput(
            FinetuneArguments args,
            boolean rankZero,
            Dtype saveDtype,
            long maxShardBytes,
            QuantizationConfig quantized,
            Consumer<String> print) {
        this.args = args;
        this.rankZero = rankZero;
        this.saveDtype = saveDtype;
        this.maxShardBytes = maxShardBytes;
        this.quantized = quantized;
        this.print = print;
    }

    /**
     * Saves the trained model and the run's files (a collective).
     *
     * @param recipe the run
     * @param trainer the model's trainer
     * @param lm the model
     * @param lora the adapters' configuration, or null for full fine-tuning
     * @param report the run's report
     * @throws IOException if writing fails
     */
    void save(
            FinetuneRecipe recipe,
            FsdpTrainer trainer,
            PretrainedModel lm,
            LoraConfig lora,
            RunReport report)
            throws IOException {
        OutputDirectory.Contents contents =
                directory -> {
                    boolean whole = lora == null || args.saveMergedModel;
                    Path model = lora == null ? directory : directory.resolve(SaveFormat.MERGED);
                    Path base = directory.resolve(SaveFormat.BASE);
                    if (lora != null) {
                        ShardedSave.adapters(trainer, lora, directory);
                    }
                    if (whole) {
                        ShardedSave.merged(trainer, lm, model, saveDtype, maxShardBytes)
                                .ifPresent(line -> print.accept(SaveFormat.MERGED + "/: " + line));
                    }
                    if (args.saveBaseModel) {
                        ShardedSave.base(trainer, lm, base, saveDtype, maxShardBytes, quantized);
                    }
                    if (rankZero) {
                        recipe.writeTokenizer(directory, whole ? model : directory);
                        if (args.saveBaseModel) {
                            recipe.writeTokenizer(base, base);
                        }
                        report.copyRunFiles(directory);
                    }
                };
        if (rankZero) {
            OutputDirectory.check(args.outputDir, args.overwriteOutputDir).replace(contents);
        } else {
            contents.writeTo(args.outputDir); // takes part in the gathers; writes nothing
        }
    }
}
