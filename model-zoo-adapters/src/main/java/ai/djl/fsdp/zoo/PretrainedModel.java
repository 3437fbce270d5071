package ai.djl.fsdp.zoo;

import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.trainer.WrapPolicy;
import ai.djl.fsdp.zoo.nn.HfBlock;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * A model of the zoo as Hugging Face's {@code PreTrainedModel} is one: a Block tree with Hugging
 * Face's module and parameter names, built from a {@link ModelConfig}, whose repeated layer is the
 * natural FSDP unit. Decoder-only language models are {@link CausalLM}s; the encoder-decoder T5 is
 * {@code ai.djl.fsdp.zoo.t5.T5ForConditionalGeneration}. What reads and writes checkpoints ({@code
 * HfCheckpoint}) works on this type.
 */
public abstract class PretrainedModel extends HfBlock {

    private final ModelConfig config;

    /**
     * Creates the model of a configuration; the subclass adds the children.
     *
     * @param config its configuration
     */
    protected PretrainedModel(ModelConfig config) {
        this.config = config;
    }

    /**
     * Returns the configuration.
     *
     * @return the configuration
     */
    public ModelConfig getConfig() {
        return config;
    }

    /**
     * Returns the class of the repeated layer ({@code GPT2Block}, {@code LlamaDecoderLayer}, {@code
     * T5Block}): the natural FSDP unit, as Hugging Face's {@code _no_split_modules}.
     *
     * @return the layer class
     */
    public Class<? extends Block> decoderLayerClass() {
        return config.family().decoderLayer();
    }

    /**
     * Returns the path of the base model inside this one, with a trailing dot, or the empty string
     * when the model has none. Checkpoints of the bare base model name their tensors without it.
     *
     * @return the base model prefix
     */
    public String basePrefix() {
        return "";
    }

    /**
     * Returns how FSDP cuts this model into units unless told otherwise.
     *
     * @return the wrap policy
     */
    public abstract WrapPolicy defaultWrapPolicy();

    /**
     * Returns the default units for training on {@code tokens} tokens per micro-batch: those of
     * {@link #defaultWrapPolicy()} unless the family weighs its head against its logits.
     *
     * @param tokens the tokens of one micro-batch on one rank
     * @return the wrap policy
     */
    public WrapPolicy defaultWrapPolicy(long tokens) {
        return defaultWrapPolicy();
    }

    /**
     * Returns the modules LoRA adapts unless told otherwise: {@code all-linear} (every projection
     * but the output head), unless the family says otherwise.
     *
     * @return the target modules, as {@code LoraConfig.Builder#setTargetModules} takes them
     */
    public List<String> defaultLoraTargets() {
        return List.of(LoraConfig.ALL_LINEAR);
    }

    /**
     * Returns the parameters that hold a row per token: the token embedding's weight and, when the
     * head does not share it, the head's weight. A checkpoint's vocabulary grows by adding rows to
     * these.
     *
     * @return the token embedding's weight, then an untied head's
     */
    public abstract List<Parameter> vocabularyParameters();

    /**
     * Returns whether a checkpoint tensor is a buffer Hugging Face stores but this model computes
     * (GPT-2's causal mask {@code attn.bias}, Llama's {@code rotary_emb.inv_freq}).
     *
     * @param name the tensor name
     * @return true if loading should skip it
     */
    public abstract boolean isComputedBuffer(String name);

    /**
     * Returns whether two blocks hold a parameter in common (a head tied to an embedding).
     *
     * @param a a block
     * @param b another block
     * @return true if some parameter of {@code b} is one of {@code a}'s
     */
    protected static boolean sharesParameter(Block a, Block b) {
        Set<String> ids = new HashSet<>();
        a.getParameters().values().forEach(parameter -> ids.add(parameter.getId()));
        return b.getParameters().values().stream()
                .anyMatch(parameter -> ids.contains(parameter.getId()));
    }
}
