package ai.djl.fsdp.lora;

import java.util.List;

/**
 * The settings of a LoRA adaptation, with PEFT's meaning and defaults: rank {@code r}, scaling
 * {@code alpha / r}, dropout on the adapter's input, and the modules to adapt (by name, matched
 * against the last components of a module's dotted path, or {@code all-linear}).
 *
 * <pre>{@code
 * LoraConfig config = LoraConfig.builder()
 *         .setTargetModules(List.of("c_attn", "c_proj"))
 *         .optRank(8).optAlpha(16).optDropout(0.05f)
 *         .build();
 * }</pre>
 */
public final class LoraConfig {

    /** The target that selects every linear projection except the output head, as in PEFT. */
    public static final String ALL_LINEAR = "all-linear";

    private static final String CAUSAL_LM = "CAUSAL_LM";

    private final int rank;
    private final float alpha;
    private final float dropout;
    private final List<String> targetModules;
    private final List<String> modulesToSave;
    private final String baseModelNameOrPath;
    private final String taskType;

    private LoraConfig(Builder builder) {
        this.rank = builder.rank;
        this.alpha = builder.alpha;
        this.dropout = builder.dropout;
        this.targetModules = builder.targetModules;
        this.modulesToSave = builder.modulesToSave;
        this.baseModelNameOrPath = builder.baseModelNameOrPath;
        this.taskType = builder.taskType;
    }

    /**
     * Returns a builder.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Returns the rank {@code r} of the adapter matrices.
     *
     * @return the rank
     */
    public int getRank() {
        return rank;
    }

    /**
     * Returns {@code lora_alpha}.
     *
     * @return alpha
     */
    public float getAlpha() {
        return alpha;
    }

    /**
     * Returns the factor the adapter's output is multiplied by, {@code alpha / r}.
     *
     * @return the scaling
     */
    public float getScaling() {
        return alpha / rank;
    }

    /**
     * Returns the dropout probability applied to the adapter's input in training.
     *
     * @return the dropout probability
     */
    public float getDropout() {
        return dropout;
    }

    /**
     * Returns the target module names, or a single {@link #ALL_LINEAR}.
     *
     * @return the targets
     */
    public List<String> getTargetModules() {
        return targetModules;
    }

    /** Returns PEFT's {@code task_type}: {@code CAUSAL_LM} or {@code SEQ_2_SEQ_LM}. */
    public String getTaskType() {
        return taskType;
    }

    /**
     * Returns PEFT's {@code modules_to_save}: the modules whose parameters train whole beside the
     * adapters and are saved with them (matched as targets are), such as a grown vocabulary's token
     * embedding and head.
     *
     * @return the module names, empty for none
     */
    public List<String> getModulesToSave() {
        return modulesToSave;
    }

    /**
     * Returns whether a module's parameters train whole and are saved with the adapters: its dotted
     * path equals one of {@link #getModulesToSave()} or ends with {@code "." + name}.
     *
     * @param path the module's dotted path
     * @return true if the module is saved with the adapters
     */
    public boolean savesModule(String path) {
        return matches(modulesToSave, path);
    }

    /**
     * Returns PEFT's {@code base_model_name_or_path}: the model the adapters were trained on, as it
     * was named (a checkpoint directory or a built-in name), or null if unknown.
     *
     * @return the base model, or null
     */
    public String getBaseModelNameOrPath() {
        return baseModelNameOrPath;
    }

    /**
     * Returns whether every linear projection but the output head is targeted.
     *
     * @return true for {@code all-linear}
     */
    public boolean targetsAllLinear() {
        return targetModules.equals(List.of(ALL_LINEAR));
    }

    /**
     * Returns whether a module is targeted, PEFT's rule: its dotted path equals a target or ends
     * with {@code "." + target}.
     *
     * @param path the module's dotted path
     * @return true if the module should be adapted
     */
    public boolean targets(String path) {
        return matches(targetModules, path);
    }

    private static boolean matches(List<String> names, String path) {
        for (String name : names) {
            if (path.equals(name) || path.endsWith('.' + name)) {
                return true;
            }
        }
        return false;
    }

    /** {@inheritDoc} */
    @Override
    public String toString() {
        return "LoraConfig{r="
                + rank
                + ", alpha="
                + alpha
                + ", dropout="
                + dropout
                + ", targets="
                + targetModules
                + (modulesToSave.isEmpty() ? "" : ", modulesToSave=" + modulesToSave)
                + '}';
    }

    /** The builder of {@link LoraConfig}. */
    public static final class Builder {

        private int rank = 8;
        private float alpha = 8;
        private float dropout;
        private List<String> targetModules;
        private List<String> modulesToSave = List.of();
        private String baseModelNameOrPath;
        private String taskType = CAUSAL_LM;

        Builder() {}

        /**
         * Sets PEFT's {@code task_type} (default {@code CAUSAL_LM}; {@code SEQ_2_SEQ_LM} for an
         * encoder-decoder model).
         *
         * @param taskType the task type
         * @return this builder
         */
        public Builder optTaskType(String taskType) {
            this.taskType = taskType;
            return this;
        }

        /**
         * Sets PEFT's {@code modules_to_save}: modules (by name, matched as targets are) whose
         * parameters train whole beside the adapters and are saved with them (default none).
         *
         * @param modulesToSave the module names
         * @return this builder
         */
        public Builder optModulesToSave(List<String> modulesToSave) {
            this.modulesToSave = List.copyOf(modulesToSave);
            return this;
        }

        /**
         * Sets the modules to adapt: names such as {@code c_attn} or {@code q_proj}, or the single
         * entry {@link #ALL_LINEAR}. Required.
         *
         * @param targetModules the targets
         * @return this builder
         */
        public Builder setTargetModules(List<String> targetModules) {
            this.targetModules = List.copyOf(targetModules);
            return this;
        }

        /**
         * Sets the rank {@code r} (default 8).
         *
         * @param rank the rank
         * @return this builder
         */
        public Builder optRank(int rank) {
            this.rank = rank;
            return this;
        }

        /**
         * Sets {@code lora_alpha} (default 8); the adapter's output is scaled by {@code alpha / r}.
         *
         * @param alpha alpha
         * @return this builder
         */
        public Builder optAlpha(float alpha) {
            this.alpha = alpha;
            return this;
        }

        /**
         * Sets the dropout probability on the adapter's input (default 0).
         *
         * @param dropout the probability, in {@code [0, 1)}
         * @return this builder
         */
        public Builder optDropout(float dropout) {
            this.dropout = dropout;
            return this;
        }

        /**
         * Sets PEFT's {@code base_model_name_or_path}, the model the adapters are trained on (a
         * checkpoint directory or a built-in name; default none).
         *
         * @param baseModelNameOrPath the base model
         * @return this builder
         */
        public Builder optBaseModelNameOrPath(String baseModelNameOrPath) {
            this.baseModelNameOrPath = baseModelNameOrPath;
            return this;
        }

        /**
         * Builds the configuration.
         *
         * @return the configuration
         * @throws IllegalArgumentException if a setting is out of range or no target was set
         */
        public LoraConfig build() {
            if (targetModules == null || targetModules.isEmpty()) {
                throw new IllegalArgumentException(
                        "LoRA needs target modules: names such as [c_attn, c_proj] or ["
                                + ALL_LINEAR
                                + "]");
            }
            if (targetModules.contains(ALL_LINEAR) && targetModules.size() > 1) {
                throw new IllegalArgumentException(
                        ALL_LINEAR + " cannot be combined with other targets");
            }
            if (rank <= 0) {
                throw new IllegalArgumentException("LoRA rank must be positive, got " + rank);
            }
            if (!(dropout >= 0 && dropout < 1)) {
                throw new IllegalArgumentException(
                        "LoRA dropout must be in [0, 1), got " + dropout);
            }
            return new LoraConfig(this);
        }
    }
}
