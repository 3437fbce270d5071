package ai.djl.fsdp.zoo.finetune.args;

import ai.djl.fsdp.trainer.MixedPrecision;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParseResult;

/**
 * Flags of Hugging Face's and TRL's recipes that this trainer cannot honour as asked. Each is
 * accepted in its usual form so a recipe runs unchanged; {@link #check} says in one line what
 * happens instead, or stops where going on would give the user something else than asked.
 */
public final class HubCompatibility {

    @Option(
            names = "--push_to_hub",
            arity = "0..1",
            fallbackValue = "true",
            description = "Accepted; there is no hub here.")
    boolean pushToHub;

    @Option(names = "--hub_private_repo", arity = "0..1", fallbackValue = "true")
    Boolean hubPrivateRepo;

    @Option(names = "--hub_strategy")
    String hubStrategy;

    @Option(names = "--hub_model_id")
    String hubModelId;

    @Option(names = "--hub_token")
    String hubToken;

    @Option(names = "--report_to")
    String reportTo;

    @Option(
            names = "--bf16",
            arity = "0..1",
            fallbackValue = "true",
            description =
                    "Gather and compute in bfloat16; master weights, optimizer state and the loss"
                            + " stay float32.")
    boolean bf16;

    @Option(
            names = "--fp16",
            arity = "0..1",
            fallbackValue = "true",
            description =
                    "Gather and compute in float16 with dynamic loss scaling; master weights,"
                            + " optimizer state and the loss stay float32.")
    boolean fp16;

    @Option(names = "--use_reentrant", arity = "0..1", fallbackValue = "true")
    Boolean useReentrant;

    @Option(names = "--use_flash_attn", arity = "0..1", fallbackValue = "true")
    boolean useFlashAttn;

    private static void addIfGiven(List<String> given, String flag, Object value) {
        if (value != null) {
            given.add(flag);
        }
    }

    /**
     * Returns the mixed precision the flags ask for: bfloat16 with {@code --bf16}, float16 (with
     * dynamic loss scaling) with {@code --fp16}, else float32.
     *
     * @return the policy
     */
    public MixedPrecision mixedPrecision() {
        return bf16 ? MixedPrecision.BF16 : fp16 ? MixedPrecision.FP16 : MixedPrecision.FP32;
    }

    /**
     * Lets the precision flag given on the command line win over the other one's default from
     * {@code ACCELERATE_MIXED_PRECISION}: {@code --bf16 True} under {@code mixed_precision: fp16}
     * trains in bfloat16.
     *
     * @param parsed the command line
     */
    public void preferGiven(ParseResult parsed) {
        if (parsed.hasMatchedOption("--bf16") && !parsed.hasMatchedOption("--fp16") && bf16) {
            fp16 = false;
        } else if (parsed.hasMatchedOption("--fp16")
                && !parsed.hasMatchedOption("--bf16")
                && fp16) {
            bf16 = false;
        }
    }

    /**
     * Stops on flags that cannot be honoured and says once what happens instead of the others.
     *
     * @param note prints a line on rank 0
     */
    public void check(Consumer<String> note) {
        List<String> hub = new ArrayList<>();
        if (pushToHub) {
            hub.add("--push_to_hub");
        }
        addIfGiven(hub, "--hub_model_id", hubModelId);
        addIfGiven(hub, "--hub_private_repo", hubPrivateRepo);
        addIfGiven(hub, "--hub_strategy", hubStrategy);
        addIfGiven(hub, "--hub_token", hubToken);
        if (!hub.isEmpty()) {
            note.accept(
                    String.join(", ", hub)
                            + ": there is no hub here; the model stays in --output_dir");
        }
        if (bf16 && fp16) {
            throw new IllegalArgumentException("--bf16 and --fp16 are both set: pick one");
        }
        if (useReentrant != null) {
            note.accept(
                    "--use_reentrant "
                            + useReentrant
                            + ": --gradient_checkpointing recomputes FSDP units in the trainer's"
                            + " own backward pass, not torch.utils.checkpoint; the flag changes"
                            + " nothing");
        }
        if (useFlashAttn) {
            note.accept(
                    "--use_flash_attn: no flash-attention kernel here; the zoo's attention"
                            + " (matmul, causal mask, softmax) runs");
        }
        if (reportTo != null && !"none".equals(reportTo)) {
            note.accept("--report_to " + reportTo + ": metrics go to metrics.jsonl instead");
        }
    }
}
