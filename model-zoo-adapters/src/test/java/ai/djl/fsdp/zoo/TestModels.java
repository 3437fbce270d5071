package ai.djl.fsdp.zoo;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.TrainerOptions;
import ai.djl.fsdp.trainer.WrapPolicy;
import ai.djl.fsdp.zoo.chat.ChatTemplate;
import ai.djl.fsdp.zoo.chat.TokenizerJson;
import ai.djl.fsdp.zoo.finetune.data.ByteLevelTokenizer;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.fsdp.zoo.hf.QuantizationConfig;
import ai.djl.fsdp.zoo.hf.Tokenizers;
import ai.djl.fsdp.zoo.hf.VocabularyResize;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.fsdp.zoo.sharded.CausalLmLoss;
import ai.djl.fsdp.zoo.sharded.ShardedStart;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.ParameterStore;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import com.google.gson.JsonArray;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Assumptions;

/** Shared helpers of the zoo's tests. */
public final class TestModels {

    private TestModels() {}

    /**
     * Returns a fresh manager of the PyTorch engine (the tokenizers jar registers a second engine,
     * so the default is not relied on).
     */
    public static NDManager newManager() {
        return Engine.getEngine("PyTorch").newBaseManager();
    }

    /** Builds a built-in model with weights drawn from a fixed seed. */
    public static CausalLM seeded(String name, NDManager manager, int seed) {
        Engine.getEngine("PyTorch").setRandomSeed(seed);
        return Models.create(Models.builtin(name), manager);
    }

    /**
     * Writes {@code llama-tiny} over the byte-level tokenizer's vocabulary (its last id the
     * beginning and end of text), its weights drawn from a seed, as a float checkpoint with that
     * tokenizer: a model {@code finetune} and {@code generate} run on from a directory.
     *
     * @param directory the checkpoint directory to write
     * @param seed the seed its weights are drawn from
     * @return the directory
     * @throws IOException if writing fails
     */
    public static Path byteLevelLlama(Path directory, int seed) throws IOException {
        JsonObject json = Models.builtin("llama-tiny").toJson();
        json.addProperty("vocab_size", ByteLevelTokenizer.VOCAB_SIZE);
        json.addProperty("bos_token_id", ByteLevelTokenizer.VOCAB_SIZE - 1);
        json.addProperty("eos_token_id", ByteLevelTokenizer.VOCAB_SIZE - 1);
        try (NDManager manager = newManager()) {
            Engine.getEngine("PyTorch").setRandomSeed(seed);
            HfCheckpoint.save(Models.create(ModelFamilies.parse(json), manager), directory);
        }
        ByteLevelTokenizer.write(directory.resolve(Tokenizers.FILE));
        return directory;
    }

    /** Returns the wrap policy that makes each of the model's decoder layers an FSDP unit. */
    public static WrapPolicy decoderLayers(CausalLM model) {
        return WrapPolicy.byLayerClass(model.decoderLayerClass().getSimpleName());
    }

    /** Returns the training configuration of a CPU rank: the causal LM loss, AdamW at 1e-3. */
    public static DefaultTrainingConfig trainingConfig() {
        return new DefaultTrainingConfig(new CausalLmLoss())
                .optOptimizer(
                        Optimizer.adamW().optLearningRateTracker(Tracker.fixed(1e-3f)).build())
                .optDevices(new Device[] {Device.cpu()});
    }

    /**
     * Starts {@code lm} sharded from a checkpoint on {@code group}'s ranks ({@link
     * ShardedStart#initialize}, its full form): each family's default units, the causal LM loss,
     * the rank's device.
     *
     * @param model the model
     * @param lm the language model, built without values
     * @param checkpoint the checkpoint directory
     * @param resize the vocabulary's growth, or null
     * @param quantization the 4-bit base, or null
     * @param lora the adapters, or null
     * @param group the job's ranks
     * @param gatherOnClose whether closing the trainer gathers the parameters into the model
     * @return the start, its trainer open
     * @throws IOException if the checkpoint cannot be read
     */
    public static ShardedStart startSharded(
            Model model,
            CausalLM lm,
            Path checkpoint,
            VocabularyResize resize,
            QuantizationConfig quantization,
            LoraConfig lora,
            ProcessGroup group,
            boolean gatherOnClose)
            throws IOException {
        return ShardedStart.initialize(
                model,
                lm,
                checkpoint,
                resize,
                quantization,
                lora,
                null,
                (m, network, source) ->
                        FullyShardedDataParallel.newTrainer(
                                m,
                                new DefaultTrainingConfig(new CausalLmLoss())
                                        .optDevices(new Device[] {group.getDevice()}),
                                group,
                                FsdpConfig.builder()
                                        .optWrapPolicy(network.defaultWrapPolicy())
                                        .build(),
                                TrainerOptions.builder()
                                        .optInitialValues(source)
                                        .optGatherOnClose(gatherOnClose)
                                        .build()));
    }

    /** Runs the model without a cache, as training does. */
    public static NDArray logits(CausalLM model, NDArray ids, NDArray mask) {
        return model.forward(new ParameterStore(ids.getManager(), false), ids, mask, null, false);
    }

    /** Returns {@code [batch, length]} token ids drawn from a fixed seed. */
    public static NDArray tokens(NDManager manager, int batch, int length, int seed) {
        long[] ids = new java.util.Random(seed).longs((long) batch * length, 0, 50257).toArray();
        return manager.create(ids).reshape(batch, length);
    }

    /** Returns the largest absolute difference of two arrays. */
    public static float maxDiff(NDArray a, NDArray b) {
        return a.toType(DataType.FLOAT32, false)
                .sub(b.toType(DataType.FLOAT32, false))
                .abs()
                .max()
                .getFloat();
    }

    /** The pieces of {@link #unigramTokenizer} after its three specials: T5's layout. */
    public static final String UNIGRAM_PIECES = " abcdefghijklmnopqrstuvwxyz0123456789.,?!+=";

    /**
     * Writes a small Unigram {@code tokenizer.json} as T5's and Flan-T5's are shaped: {@code
     * model.vocab} a list of {@code [piece, score]} pairs, {@code <pad>} 0, {@code </s>} 1 and
     * {@code <unk>} 2 also added tokens, then one piece per character of {@link #UNIGRAM_PIECES}
     * and the pieces {@code "the"} and {@code " was"}; 48 ids in all.
     *
     * @param file the file to write
     * @return the file
     * @throws IOException if writing fails
     */
    public static Path unigramTokenizer(Path file) throws IOException {
        JsonArray vocab = new JsonArray();
        JsonArray added = new JsonArray();
        List<String> specials = List.of("<pad>", "</s>", "<unk>");
        for (int id = 0; id < specials.size(); id++) {
            vocab.add(piece(specials.get(id), 0));
            added.add(TokenizerJson.addedToken(id, specials.get(id)));
        }
        for (char c : UNIGRAM_PIECES.toCharArray()) {
            vocab.add(piece(String.valueOf(c), -5));
        }
        vocab.add(piece("the", -2));
        vocab.add(piece(" was", -2));
        JsonObject model = new JsonObject();
        model.addProperty("type", "Unigram");
        model.addProperty("unk_id", 2);
        model.add("vocab", vocab);
        JsonObject root = new JsonObject();
        root.addProperty("version", "1.0");
        root.add("truncation", JsonNull.INSTANCE);
        root.add("padding", JsonNull.INSTANCE);
        root.add("added_tokens", added);
        root.add("model", model);
        Files.writeString(file, root.toString());
        return file;
    }

    private static JsonArray piece(String text, double score) {
        JsonArray pair = new JsonArray();
        pair.add(text);
        pair.add(score);
        return pair;
    }

    /**
     * Writes a plain-text dataset of numbered lines, {@code small.txt} in {@code directory}.
     *
     * @param directory where to write it
     * @param lines how many lines
     * @return the file
     * @throws IOException if it cannot be written
     */
    public static Path smallText(Path directory, int lines) throws IOException {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < lines; i++) {
            text.append("line ").append(i).append(": a small text to learn.\n");
        }
        return Files.writeString(directory.resolve("small.txt"), text);
    }

    /**
     * Copies a LoRA run's adapters, tokenizer and chat template out of its output directory into
     * {@code directory/adapters-alone}, without the merged model: {@code generate} on it puts the
     * adapters on their base, the checkpoint {@code base_model_name_or_path} names.
     *
     * @param output finetune's output directory
     * @param directory where the copy is made
     * @return the adapter directory
     * @throws IOException if a file cannot be copied
     */
    public static Path adaptersAlone(Path output, Path directory) throws IOException {
        Path adapters = Files.createDirectory(directory.resolve("adapters-alone"));
        for (String file :
                List.of(
                        Lora.CONFIG_FILE,
                        Lora.WEIGHTS_FILE,
                        Tokenizers.FILE,
                        ChatTemplate.CONFIG_FILE)) {
            Files.copy(output.resolve(file), adapters.resolve(file));
        }
        return adapters;
    }

    /**
     * Finds a test data file: in the shared test data folder, walking up from the working directory
     * (Surefire runs in the module's directory), else the copy the tests ship compressed under
     * {@code test-data/} (GPT-2's tokenizer, MIT licensed), unpacked once into {@code target/};
     * skips the test when neither has it.
     */
    public static Path sharedData(String file) {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolve("shared/data").resolve(file);
            if (Files.exists(candidate)) {
                return candidate;
            }
        }
        Path bundled = unpackBundled(file);
        if (bundled != null) {
            return bundled;
        }
        Assumptions.abort(
                "test data "
                        + file
                        + " not found in any shared/data above "
                        + Path.of("").toAbsolutePath());
        return null;
    }

    /** Unpacks {@code test-data/FILE.gz} from the test resources, or returns null without one. */
    private static synchronized Path unpackBundled(String file) {
        Path target = Path.of("target", "test-data", file).toAbsolutePath();
        if (Files.exists(target)) {
            return target;
        }
        try (InputStream packed =
                TestModels.class.getResourceAsStream("/test-data/" + file + ".gz")) {
            if (packed == null) {
                return null;
            }
            Files.createDirectories(target.getParent());
            Path partial = Files.createTempFile(target.getParent(), file, ".partial");
            try (InputStream in = new GZIPInputStream(packed)) {
                Files.copy(in, partial, StandardCopyOption.REPLACE_EXISTING);
            }
            Files.move(partial, target, StandardCopyOption.ATOMIC_MOVE);
            return target;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot unpack the bundled test data " + file, e);
        }
    }
}
