package ai.djl.fsdp.zoo.generate;

import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.safetensors.SafetensorsCheckpoint;
import ai.djl.fsdp.safetensors.SafetensorsFile;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.zoo.ModelConfig;
import ai.djl.fsdp.zoo.PretrainedModel;
import ai.djl.fsdp.zoo.hf.ConfigJson;
import ai.djl.fsdp.zoo.hf.Tokenizers;
import ai.djl.fsdp.zoo.hf.VocabularyResize;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.fsdp.zoo.sharded.SaveFormat;
import ai.djl.nn.Parameter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Where {@code generate --model DIR} finds its model: a checkpoint directory ({@code config.json}
 * and safetensors), or a PEFT adapter directory such as a LoRA run of {@code finetune} writes
 * ({@code adapter_config.json}, {@code adapter_model.safetensors}, and the merged model in {@code
 * merged/}). For adapters the merged model is used when it is there; else the adapters are put on
 * their base model, the checkpoint {@code base_model_name_or_path} names.
 *
 * @param checkpoint the checkpoint directory to load
 * @param adapters the adapter directory to apply to it, or null
 * @param tokenizerDirectory where {@code tokenizer.json} and {@code tokenizer_config.json} are
 * @param note one line saying what was chosen, or null for a plain checkpoint
 */
record ModelLocation(Path checkpoint, Path adapters, Path tokenizerDirectory, String note) {

    /**
     * Returns how the checkpoint's vocabulary grows under the adapters: where their saved token
     * embedding (PEFT's {@code modules_to_save} or resized embedding layers) has more rows than the
     * checkpoint's vocabulary, as finetune saves it after growing the vocabulary for a chat
     * template's tokens, the model is built at that size and the adapters give the embedding and
     * head their values (the growth's own rows are never drawn). Null otherwise.
     *
     * @return the growth, or null
     * @throws IOException if a file cannot be read
     */
    VocabularyResize grownVocabulary() throws IOException {
        if (adapters == null) {
            return null;
        }
        ModelConfig config = ModelFamilies.read(checkpoint);
        PretrainedModel lm = Models.forAnyCheckpoint(config);
        Parameter embedding = lm.vocabularyParameters().get(0);
        String key =
                StateDict.parameters(lm).entrySet().stream()
                        .filter(entry -> entry.getValue() == embedding)
                        .map(entry -> Lora.PEFT_PREFIX + entry.getKey())
                        .findFirst()
                        .orElseThrow();
        try (SafetensorsFile file = SafetensorsFile.open(adapters.resolve(Lora.WEIGHTS_FILE))) {
            if (!file.getNames().contains(key)) {
                return null;
            }
            long rows = file.info(key).shape().get(0);
            return rows > config.vocabSize()
                    ? VocabularyResize.of(config.vocabSize(), Math.toIntExact(rows), false, 0, 0)
                    : null;
        }
    }

    /**
     * Decides what to load for a {@code --model} directory.
     *
     * @param directory the directory given
     * @return where the model is
     * @throws IOException if an adapter configuration cannot be read
     * @throws IllegalArgumentException naming the directory and what to pass instead, when it holds
     *     neither a checkpoint nor adapters whose model can be found
     */
    static ModelLocation of(Path directory) throws IOException {
        if (Files.exists(directory.resolve(ConfigJson.FILE))) {
            return new ModelLocation(directory, null, directory, null);
        }
        Path adapterConfig = directory.resolve(Lora.CONFIG_FILE);
        if (!Files.exists(adapterConfig)) {
            throw new IllegalArgumentException(
                    "--model "
                            + directory
                            + " holds neither "
                            + ConfigJson.FILE
                            + " nor "
                            + Lora.CONFIG_FILE
                            + ": give a checkpoint directory (config.json + *.safetensors) or the"
                            + " --output_dir of bin/fsdp finetune");
        }
        Path merged = directory.resolve(SaveFormat.MERGED);
        if (Files.exists(merged.resolve(ConfigJson.FILE))) {
            return new ModelLocation(
                    merged,
                    null,
                    merged,
                    directory
                            + " holds LoRA adapters: generating with the merged model in "
                            + merged);
        }
        String base = Lora.readConfig(directory).getBaseModelNameOrPath();
        boolean baseConfig = base != null && Files.exists(Path.of(base).resolve(ConfigJson.FILE));
        if (baseConfig && SafetensorsCheckpoint.existsIn(Path.of(base))) {
            Path tokenizers =
                    Files.exists(directory.resolve(Tokenizers.FILE)) ? directory : Path.of(base);
            return new ModelLocation(
                    Path.of(base),
                    directory,
                    tokenizers,
                    "generating with the LoRA adapters in " + directory + " on their base " + base);
        }
        throw new IllegalArgumentException(
                "--model "
                        + directory
                        + " holds LoRA adapters, but no merged model ("
                        + merged
                        + ") and their base_model_name_or_path ("
                        + base
                        + (baseConfig
                                ? ") has a config.json but no weights: the adapters were trained"
                                        + " on fresh weights that were never saved, so only the"
                                        + " merged model can generate; pass the merged model's"
                                        + " directory (finetune --save_base_model True saves the"
                                        + " base with the adapters)"
                                : ") is not a checkpoint directory: pass the merged model's"
                                        + " directory, or set base_model_name_or_path in "
                                        + adapterConfig
                                        + " to the base checkpoint"));
    }
}
