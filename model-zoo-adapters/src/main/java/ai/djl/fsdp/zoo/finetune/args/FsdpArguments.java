package ai.djl.fsdp.zoo.finetune.args;

import ai.djl.fsdp.trainer.ActivationCheckpointing;
import ai.djl.fsdp.trainer.CommunicationQuantization;
import ai.djl.fsdp.trainer.MixedPrecision;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.trainer.WrapPolicy;
import ai.djl.fsdp.wrap.LayerClasses;
import ai.djl.fsdp.wrap.WrapPlanner;
import ai.djl.fsdp.zoo.PretrainedModel;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Consumer;
import picocli.CommandLine.Option;

/**
 * How the ranks shard the model: the {@code fsdp_config} settings of Accelerate's config file as
 * flags. Their defaults come from Accelerate's variables ({@code FSDP_*}, see {@link
 * ai.djl.fsdp.zoo.finetune.config.AccelerateDefaults}) that {@code bin/fsdp launch --config_file}
 * sets, or that a {@code --config_file} given here stands for; flags on the command line win.
 */
public final class FsdpArguments {

    @Option(
            names = "--config_file",
            description =
                    "Accelerate's config file, as `accelerate config` writes it (fsdp_config and"
                            + " the launch keys).")
    public Path configFile;

    @Option(
            names = {"--sharding_strategy", "--fsdp_sharding_strategy"},
            defaultValue = "FULL_SHARD",
            description =
                    "FULL_SHARD (1), SHARD_GRAD_OP (2), NO_SHARD (3), HYBRID_SHARD (4) or"
                            + " HYBRID_SHARD_ZERO2 (5) (default FULL_SHARD).")
    public String shardingStrategy;

    @Option(
            names = "--fsdp_transformer_layer_cls_to_wrap",
            split = ",",
            description =
                    "Block classes that become FSDP units, comma-separated, as Accelerate wraps"
                            + " them (default: the model's decoder layer, GPT2Block,"
                            + " LlamaDecoderLayer, MistralDecoderLayer, Qwen2DecoderLayer or"
                            + " Qwen3DecoderLayer, and, when the head is not tied to the token"
                            + " embedding, the embedding and the head each a unit of its own).")
    public List<String> layerClassesToWrap;

    @Option(
            names = "--fsdp_auto_wrap_policy",
            defaultValue = "TRANSFORMER_BASED_WRAP",
            description =
                    "TRANSFORMER_BASED_WRAP (the default): the layer classes become units; others"
                            + " are noted and units stay the layers.")
    public String autoWrapPolicy;

    @Option(names = "--fsdp_min_num_params", description = "For SIZE_BASED_WRAP (noted).")
    public Long minNumParams;

    @Option(
            names = {"--fsdp_backward_prefetch", "--fsdp_backward_prefetch_policy"},
            defaultValue = "BACKWARD_PRE",
            description = "BACKWARD_PRE, BACKWARD_POST or NO_PREFETCH (default BACKWARD_PRE).")
    public String backwardPrefetch;

    @Option(
            names = "--fsdp_sync_module_states",
            arity = "0..1",
            fallbackValue = "true",
            defaultValue = "true",
            description = "Broadcast rank 0's fresh weights to every rank (default true).")
    public boolean syncModuleStates;

    @Option(
            names = "--fsdp_offload_params",
            arity = "0..1",
            fallbackValue = "true",
            description =
                    "Keep parameter shards, gradients and optimizer state in host memory and step"
                            + " the optimizer there (default false).")
    public boolean offloadParams;

    @Option(
            names = "--gradient_checkpointing",
            arity = "0..1",
            fallbackValue = "true",
            description =
                    "Recompute every FSDP unit in backward (True) or keep its activations from"
                            + " forward (False), whatever the sharding strategy (default: True"
                            + " where the strategy frees parameters after forward, FULL_SHARD and"
                            + " HYBRID_SHARD; Accelerate's fsdp_activation_checkpointing).")
    public Boolean gradientCheckpointing;

    @Option(names = "--fsdp_state_dict_type")
    public String stateDictType;

    @Option(
            names = "--fsdp_use_orig_params",
            arity = "0..1",
            fallbackValue = "true",
            description = "Accepted (noted): each unit's parameters are flattened either way.")
    public Boolean useOrigParams;

    @Option(
            names = "--fsdp_cpu_ram_efficient_loading",
            arity = "0..1",
            fallbackValue = "true",
            description =
                    "Accepted (noted): every rank reads only its shard of a checkpoint either way.")
    public Boolean cpuRamEfficientLoading;

    @Option(names = "--fsdp_forward_prefetch", arity = "0..1", fallbackValue = "true")
    public boolean forwardPrefetch;

    @Option(
            names = {"--fsdp_communication_quantization", "--communication_quantization"},
            defaultValue = "none",
            description =
                    "Send fewer bytes between ranks (ZeRO++'s qwZ and qgZ): none (the default), or"
                            + " comma-separated weights=none|int8, gradients=none|int8|int4,"
                            + " block=64..2048 (values per scale, default 64) and"
                            + " scope=all|inter-node (hybrid sharding: only the average between"
                            + " nodes), e.g. weights=int8,gradients=int4.")
    public String communicationQuantization;

    /**
     * The mixed precision of the run, from {@code --bf16} or {@code --fp16} (set by the command,
     * not a flag).
     */
    public MixedPrecision mixedPrecision = MixedPrecision.FP32;

    /**
     * Returns the units recomputed in backward: every unit with {@code --gradient_checkpointing
     * True}, none with {@code False}; empty when not given (the trainer's default).
     *
     * @return the policy
     */
    public Optional<ActivationCheckpointing> activationCheckpointing() {
        return Optional.ofNullable(gradientCheckpointing).map(ActivationCheckpointing::of);
    }

    /**
     * Parses {@code --fsdp_communication_quantization}.
     *
     * @return what the collectives quantize
     * @throws IllegalArgumentException naming the flag and what it may be
     */
    public CommunicationQuantization quantization() {
        try {
            return CommunicationQuantization.parse(communicationQuantization);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "--fsdp_communication_quantization: " + e.getMessage(), e);
        }
    }

    /**
     * Parses the strategy as Accelerate writes it: a name or PyTorch's number.
     *
     * @return the strategy
     */
    public ShardingStrategy strategy() {
        String value = shardingStrategy.trim().toUpperCase(Locale.ROOT);
        switch (value) {
            case "1":
                return ShardingStrategy.FULL_SHARD;
            case "2":
                return ShardingStrategy.SHARD_GRAD_OP;
            case "3":
                return ShardingStrategy.NO_SHARD;
            case "4":
                return ShardingStrategy.HYBRID_SHARD;
            case "5":
                return ShardingStrategy.HYBRID_SHARD_ZERO2;
            default:
                try {
                    return ShardingStrategy.valueOf(value);
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException(
                            "--sharding_strategy "
                                    + shardingStrategy
                                    + " is not one of FULL_SHARD (1), SHARD_GRAD_OP (2), NO_SHARD"
                                    + " (3), HYBRID_SHARD (4), HYBRID_SHARD_ZERO2 (5)");
                }
        }
    }

    /**
     * Returns the units' policy: the flag's block classes, each checked to be in the model, as
     * Accelerate wraps them; or without the flag the model's own for training ({@link
     * PretrainedModel#defaultWrapPolicy(long)}: the decoder layers, an untied embedding alone, and
     * an untied head alone where its logits cost less than its weight).
     *
     * @param lm the model
     * @param tokens the tokens of one micro-batch on one rank
     * @return the wrap policy
     * @throws IllegalArgumentException if a named class is not a layer of the model; the message
     *     lists the model's
     */
    public WrapPolicy wrapPolicy(PretrainedModel lm, long tokens) {
        if (layerClassesToWrap == null) {
            return lm.defaultWrapPolicy(tokens);
        }
        // The planner refuses such a class too; this says which flag and which class to name.
        List<String> missing =
                WrapPlanner.unmatchedClasses(lm, LayerClasses.of(layerClassesToWrap));
        if (!missing.isEmpty()) {
            String decoder = lm.decoderLayerClass().getSimpleName();
            throw new IllegalArgumentException(
                    "--fsdp_transformer_layer_cls_to_wrap "
                            + String.join(",", missing)
                            + ": the model has no layer of that class. Its layer classes: "
                            + String.join(", ", WrapPlanner.blockClasses(lm))
                            + ". Name the repeated decoder layer, "
                            + decoder
                            + ", or leave the flag (fsdp_transformer_layer_cls_to_wrap in"
                            + " --config_file) out to get it");
        }
        return WrapPolicy.byLayerClass(layerClassesToWrap);
    }

    /**
     * Returns whether the next unit is gathered ahead.
     *
     * @return false for {@code NO_PREFETCH}
     */
    public boolean prefetch() {
        String value = backwardPrefetch.trim().toUpperCase(Locale.ROOT);
        if (!List.of("BACKWARD_PRE", "BACKWARD_POST", "NO_PREFETCH").contains(value)) {
            throw new IllegalArgumentException(
                    "--fsdp_backward_prefetch "
                            + backwardPrefetch
                            + " is not one of BACKWARD_PRE, BACKWARD_POST, NO_PREFETCH");
        }
        return !"NO_PREFETCH".equals(value);
    }

    /**
     * Says once what the settings that do not apply do instead.
     *
     * @param note prints a line on rank 0
     */
    public void check(Consumer<String> note) {
        if ("BACKWARD_POST".equalsIgnoreCase(backwardPrefetch.trim())) {
            note.accept("fsdp_backward_prefetch BACKWARD_POST: the next unit is gathered ahead");
        }
        if (stateDictType != null && !stateDictType.startsWith("FULL")) {
            note.accept(
                    "fsdp_state_dict_type "
                            + stateDictType
                            + ": the model is saved as a full Hugging Face checkpoint, written"
                            + " one unit at a time");
        }
        if (useOrigParams != null) {
            note.accept(
                    "fsdp_use_orig_params "
                            + useOrigParams
                            + ": each unit's parameters are flattened into one shard (frozen and"
                            + " trainable ones apart) either way; saved models keep the original"
                            + " names");
        }
        if (cpuRamEfficientLoading != null) {
            note.accept(
                    "fsdp_cpu_ram_efficient_loading "
                            + cpuRamEfficientLoading
                            + ": every rank reads only its own shard of a checkpoint either way;"
                            + " no rank loads the whole model");
        }
        if (!"TRANSFORMER_BASED_WRAP".equalsIgnoreCase(autoWrapPolicy.trim())) {
            note.accept(
                    "fsdp_auto_wrap_policy "
                            + autoWrapPolicy
                            + (minNumParams != null
                                    ? " (fsdp_min_num_params " + minNumParams + ")"
                                    : "")
                            + ": units are fsdp_transformer_layer_cls_to_wrap's classes, by"
                            + " default the decoder layers and an untied embedding and head");
        }
        if (forwardPrefetch) {
            note.accept("fsdp_forward_prefetch: prefetch follows fsdp_backward_prefetch");
        }
    }
}
