package ai.djl.fsdp.zoo.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.zoo.ModelConfig;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.finetune.args.FinetuneArguments;
import ai.djl.fsdp.zoo.finetune.args.FsdpArguments;
import ai.djl.fsdp.zoo.finetune.data.ByteLevelTokenizer;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.fsdp.zoo.sharded.CausalLmLoss;
import ai.djl.ndarray.NDManager;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code --append_concat_token} appends the tokenizer's end-of-sequence token, as TRL appends
 * {@code tokenizer.eos_token_id}: the {@code eos_token} of {@code tokenizer_config.json}, else the
 * model's {@code eos_token_id}; a tokenizer without {@code <|endoftext|>} (Llama's, T5's) no longer
 * gets id 0, the byte-level tokenizer keeps its {@code <|endoftext|>}, and with neither key the
 * flag is refused naming both.
 */
class ConcatTokenTest {

    @TempDir Path dir;

    @Test
    void theTokenizersEosTokenIsAppended() throws IOException {
        Path tokenizer = TestModels.unigramTokenizer(dir.resolve("tokenizer.json"));
        Files.writeString(
                dir.resolve("tokenizer_config.json"),
                "{\"eos_token\": {\"content\": \"</s>\", \"special\": true}}");
        assertEquals(1, appended(tokenizer, config(2)), "</s>, not <pad> 0 nor config's 2");
    }

    @Test
    void withoutTokenizerConfigTheModelsEosTokenIdIsAppended() throws IOException {
        Path tokenizer = TestModels.unigramTokenizer(dir.resolve("tokenizer.json"));
        assertEquals(2, appended(tokenizer, config(2)));
    }

    @Test
    void theByteLevelTokenizerKeepsItsEndOfText() throws IOException {
        ModelConfig builtin =
                FinetuneRecipe.builtin(
                        "llama-tiny",
                        ByteLevelTokenizer.VOCAB_SIZE,
                        ByteLevelTokenizer.VOCAB_SIZE - 1);
        assertEquals(ByteLevelTokenizer.VOCAB_SIZE - 1, appended(null, builtin));
    }

    @Test
    void withNeitherKeyTheFlagIsRefused() throws IOException {
        Path tokenizer = TestModels.unigramTokenizer(dir.resolve("tokenizer.json"));
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> appended(tokenizer, config(-1)));
        assertEquals(
                "--append_concat_token appends the end-of-sequence token, but the tokenizer has"
                        + " no eos_token ("
                        + dir.toAbsolutePath().resolve("tokenizer_config.json")
                        + ") and the model's config.json no eos_token_id: add one of them, or"
                        + " leave out --append_concat_token",
                e.getMessage());
    }

    /** A small Llama over the Unigram tokenizer's 48 ids, with an eos_token_id unless negative. */
    private static ModelConfig config(long eos) {
        JsonObject json = Models.builtin("llama-tiny").toJson();
        json.addProperty("vocab_size", 48);
        json.remove("bos_token_id");
        json.remove("eos_token_id");
        if (eos >= 0) {
            json.addProperty("eos_token_id", eos);
        }
        return ModelFamilies.parse(json);
    }

    /** Prepares a run on two text examples and returns the last label of the first one. */
    private long appended(Path tokenizer, ModelConfig model) throws IOException {
        Path data = dir.resolve("data.jsonl");
        Files.writeString(
                data, "{\"text\": \"the film was fine\"}\n{\"text\": \"the meal was good\"}\n");
        FinetuneArguments args = new FinetuneArguments();
        FsdpArguments fsdp = new FsdpArguments();
        CommandLine line = new CommandLine(CommandSpec.create());
        line.addMixin("args", args);
        line.addMixin("fsdp", fsdp);
        line.parseArgs(
                "--dataset_name",
                data.toString(),
                "--append_concat_token",
                "--max_seq_len",
                "32",
                "--eval_strategy",
                "no",
                "--exact_match_samples",
                "0",
                "--output_dir",
                dir.resolve("out").toString());
        FinetuneRecipe.ModelSource source =
                new FinetuneRecipe.ModelSource() {
                    @Override
                    public Path tokenizer() {
                        return tokenizer;
                    }

                    @Override
                    public ModelConfig stored() {
                        return model;
                    }

                    @Override
                    public boolean hasWeights() {
                        return false;
                    }

                    @Override
                    public ModelConfig architecture(int vocab, long endOfText) {
                        return model;
                    }
                };
        List<String> notes = new ArrayList<>();
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""));
                FinetuneRecipe recipe =
                        FinetuneRecipe.prepare(args, fsdp, group, source, notes::add);
                NDManager manager = TestModels.newManager()) {
            long[] labels = recipe.train.batch(manager, new int[] {0}).labels().toLongArray();
            long last = CausalLmLoss.IGNORE;
            for (long label : labels) {
                last = label == CausalLmLoss.IGNORE ? last : label;
            }
            return last;
        }
    }
}
