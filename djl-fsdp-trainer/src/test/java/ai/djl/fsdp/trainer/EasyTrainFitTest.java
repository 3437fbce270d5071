package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import org.junit.jupiter.api.Test;

/** {@code EasyTrain.fit} with DJL's listeners runs unchanged on an FSDP trainer. */
class EasyTrainFitTest {

    @Test
    void fitsWithListenersAsDjlsTrainerDoes() throws Exception {
        FitScenario.Result reference = FitScenario.runReference();
        FitScenario.Result fsdp;
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            fsdp = FitScenario.runFsdp(group);
        }
        Equivalence.Bound bound =
                FitScenario.noiseBound(FitScenario.Variant.PLAIN, reference.parameters());
        assertEquals(FitScenario.EPOCHS * FitScenario.BATCHES, fsdp.trainingBatches());
        assertEquals(FitScenario.EPOCHS * FitScenario.BATCHES, fsdp.validationBatches());
        assertEquals(FitScenario.EPOCHS, fsdp.epochs());
        assertTrue(fsdp.trainingResult().getTrainLoss() != null, "train loss recorded");
        assertTrue(fsdp.trainingResult().getValidateLoss() != null, "validation loss recorded");
        assertEquals(
                reference.trainingResult().getValidateLoss(),
                fsdp.trainingResult().getValidateLoss(),
                // Parameters within the bound give a loss within about as much.
                bound.parameter() * Math.abs(reference.trainingResult().getValidateLoss()));
        Equivalence.assertSameTraining(
                "EasyTrain.fit",
                bound,
                new double[0],
                new double[0],
                reference.parameters(),
                fsdp.parameters());
        Equivalence.assertSameTraining(
                "checkpoint of the last epoch",
                Equivalence.Bound.EXACT,
                new double[0],
                new double[0],
                fsdp.parameters(),
                fsdp.checkpoint());
    }
}
