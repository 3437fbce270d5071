package ai.djl.fsdp.zoo.finetune;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.trainer.NonFiniteGradientException;
import ai.djl.fsdp.zoo.finetune.args.FinetuneArguments;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The errors that end a run whose steps stopped being finite name the figures and the flags. */
class NonFiniteStopTest {

    @Test
    void aCollapsedLossScaleNamesTheScaleAndItsFloor() {
        FinetuneArguments args = new FinetuneArguments();
        args.outputDir = Path.of("out");
        NonFiniteGradientException e =
                NonFiniteGradientException.lossScaleCollapsed(7, Double.NaN, 3, 0.25f, 0.5f);
        String message = NonFiniteStop.of(7, Float.NaN, e, args).getMessage();
        assertTrue(message.contains("fell to 0.25, below its floor (0.5)"), message);
        assertTrue(message.contains("--bf16"), message);
    }

    @Test
    void aRunOfNonFiniteNormsNamesTheFlags() {
        FinetuneArguments args = new FinetuneArguments();
        args.outputDir = Path.of("out");
        String message =
                NonFiniteStop.of(
                                4,
                                Float.NaN,
                                new NonFiniteGradientException(4, Double.NaN, 1),
                                args)
                        .getMessage();
        assertTrue(message.contains("step 4: the loss is NaN"), message);
        assertTrue(message.contains("--max_non_finite_steps 2"), message);
    }
}
