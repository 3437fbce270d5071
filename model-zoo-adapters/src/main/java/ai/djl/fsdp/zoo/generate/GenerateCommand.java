package ai.djl.fsdp.zoo.generate;

import ai.djl.engine.Engine;
import ai.djl.fsdp.cli.Subcommand;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.RankDevice;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.Models;
import ai.djl.fsdp.zoo.finetune.data.ChatTemplate;
import ai.djl.fsdp.zoo.finetune.data.JinjaChatTemplate;
import ai.djl.fsdp.zoo.hf.Tokenizers;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.djl.ndarray.NDManager;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code bin/fsdp generate}: continues a prompt with a model from a checkpoint directory. */
@Command(
        name = "generate",
        mixinStandardHelpOptions = true,
        description =
                "Continue a prompt with a causal language model (GPT-2, Llama) and print the text.")
public final class GenerateCommand implements Subcommand {

    @Spec private CommandSpec spec;

    @Option(
            names = "--model",
            required = true,
            description =
                    "Hugging Face checkpoint directory (config.json, *.safetensors), the"
                            + " --output_dir of finetune (LoRA: its merged model, or the adapters"
                            + " on their base_model_name_or_path), or a built-in architecture with"
                            + " random weights: gpt2-tiny, gpt2-mini, llama-tiny.")
    private String model;

    @Option(names = "--prompt", required = true, description = "The text to continue.")
    private String prompt;

    @Option(
            names = "--max_new_tokens",
            defaultValue = "32",
            description = "Most tokens to generate (default ${DEFAULT-VALUE}).")
    private int maxNewTokens;

    @Option(
            names = "--temperature",
            defaultValue = "0",
            description = "Sampling temperature; 0 is greedy (default ${DEFAULT-VALUE}).")
    private float temperature;

    @Option(
            names = "--top_k",
            defaultValue = "0",
            description =
                    "Sample among the k most likely tokens; 0 is off (default ${DEFAULT-VALUE}).")
    private int topK;

    @Option(
            names = "--top_p",
            defaultValue = "1",
            description = "Sample within this probability mass (default ${DEFAULT-VALUE}).")
    private float topP;

    @Option(
            names = "--seed",
            defaultValue = "42",
            description = "Sampling seed (default ${DEFAULT-VALUE}).")
    private long seed;

    @Option(names = "--tokenizer", description = "tokenizer.json (default: the one in --model).")
    private Path tokenizer;

    @Override
    public Integer call() throws Exception {
        // DJL's start-up logging (engine, CUDA detection) is not the user's output.
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "error");
        }
        boolean checkpoint = Files.isDirectory(Path.of(model));
        if (!checkpoint && tokenizer == null) {
            throw new IllegalArgumentException(
                    "--model " + model + " is not a directory: built-in models need --tokenizer");
        }
        ModelLocation location = checkpoint ? ModelLocation.of(Path.of(model)) : null;
        if (location != null && location.note() != null) {
            spec.commandLine().getErr().println("note: " + location.note());
            spec.commandLine().getErr().flush();
        }
        Path directory = checkpoint ? location.tokenizerDirectory() : null;
        Path tokenizerPath = tokenizer != null ? tokenizer : directory.resolve(Tokenizers.FILE);
        try (NDManager manager =
                        Engine.getEngine("PyTorch")
                                .newBaseManager(RankDevice.of(DistributedEnv.fromEnvironment()));
                HuggingFaceTokenizer tok = Tokenizers.load(tokenizerPath, "--tokenizer")) {
            CausalLM lm =
                    checkpoint
                            ? Models.load(location.checkpoint(), manager)
                            : Models.create(Models.builtin(model), manager);
            if (checkpoint && location.adapters() != null) {
                Lora.load(lm, location.adapters());
            }
            JinjaChatTemplate chat =
                    checkpoint
                            ? JinjaChatTemplate.read(directory.resolve(ChatTemplate.CONFIG_FILE))
                            : null;
            List<Long> stops = new ArrayList<>(lm.getConfig().eosTokenIds());
            long[] promptIds;
            if (chat != null) {
                // A chat model answers the prompt as a user's message, in its own template.
                String text =
                        chat.generationPrompt(List.of(Map.of("role", "user", "content", prompt)));
                promptIds = tok.encode(text).getIds();
                long[] end =
                        chat.endOfTurn() == null
                                ? new long[0]
                                : tok.encode(chat.endOfTurn()).getIds();
                if (end.length == 1) {
                    stops.add(end[0]);
                }
            } else {
                promptIds = tok.encode(prompt).getIds();
            }
            int room = lm.getConfig().maxPositions() - promptIds.length;
            int newTokens = Math.min(maxNewTokens, Math.max(room, 0));
            PrintWriter err = spec.commandLine().getErr();
            if (newTokens < maxNewTokens) {
                err.println(
                        "warning: the model has "
                                + lm.getConfig().maxPositions()
                                + " positions and the prompt takes "
                                + promptIds.length
                                + ": generating at most "
                                + newTokens
                                + " of --max_new_tokens "
                                + maxNewTokens);
                err.flush();
            }
            GenerationConfig config =
                    GenerationConfig.builder()
                            .optMaxNewTokens(newTokens)
                            .optTemperature(temperature)
                            .optTopK(topK)
                            .optTopP(topP)
                            .optSeed(seed)
                            .optStopTokens(stops)
                            .build();
            long[] generated = new Generator(lm).generate(manager, promptIds, config);
            PrintWriter out = spec.commandLine().getOut();
            if (chat != null) {
                long[] reply = generated;
                if (reply.length > 0 && stops.contains(reply[reply.length - 1])) {
                    reply = java.util.Arrays.copyOf(reply, reply.length - 1);
                }
                out.println(tok.decode(reply).trim());
            } else {
                // Decode prompt and continuation together: a character's bytes may span them.
                long[] all =
                        java.util.stream.LongStream.concat(
                                        java.util.Arrays.stream(promptIds),
                                        java.util.Arrays.stream(generated))
                                .toArray();
                out.println(tok.decode(all));
            }
            out.flush();
        }
        return 0;
    }
}
