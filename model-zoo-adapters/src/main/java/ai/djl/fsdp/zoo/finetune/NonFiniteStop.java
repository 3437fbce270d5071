package ai.djl.fsdp.zoo.finetune;

import ai.djl.fsdp.trainer.NonFiniteGradientException;
import ai.djl.fsdp.zoo.finetune.args.FinetuneArguments;
import java.util.Locale;

/**
 * The end of a run whose steps stopped being finite, in the flags' terms: the trainer's {@link
 * NonFiniteGradientException} (a run of non-finite gradient norms, or a float16 loss scale backed
 * off below its floor) with what to change on the command line.
 */
final class NonFiniteStop {

    private NonFiniteStop() {}

    /**
     * Returns the error that ends the job.
     *
     * @param step the run's step that failed
     * @param loss its loss
     * @param e the trainer's exception, kept as a suppressed one
     * @param args the run's flags
     * @return the error
     */
    static IllegalStateException of(
            int step, float loss, NonFiniteGradientException e, FinetuneArguments args) {
        String message;
        if (!Double.isNaN(e.getMinLossScale())) {
            message =
                    String.format(
                            Locale.ROOT,
                            "step %d: the float16 gradients overflowed %d step(s) in a row and the"
                                    + " loss scale fell to %s, below its floor (%s); training stops"
                                    + " and no model is saved to --output_dir %s. Train with --bf16"
                                    + " instead of --fp16, or lower --learning_rate (now %s)",
                            step,
                            e.getConsecutiveSteps(),
                            e.getLossScale(),
                            e.getMinLossScale(),
                            args.outputDir,
                            args.learningRate);
        } else {
            message =
                    String.format(
                            Locale.ROOT,
                            "step %d: the loss is %s and the gradient norm %s (%d step(s) in a row,"
                                    + " none applied); training stops and no model is saved to"
                                    + " --output_dir %s. Lower --learning_rate (now %s) or clip"
                                    + " gradients with --max_grad_norm (now %s);"
                                    + " --max_non_finite_steps %d skips that many bad steps in a"
                                    + " row",
                            step,
                            loss,
                            e.getNorm(),
                            e.getConsecutiveSteps(),
                            args.outputDir,
                            args.learningRate,
                            args.maxGradNorm > 0 ? args.maxGradNorm : "0, off",
                            e.getConsecutiveSteps() + 1);
        }
        IllegalStateException stop = new IllegalStateException(message);
        stop.addSuppressed(e);
        return stop;
    }
}
