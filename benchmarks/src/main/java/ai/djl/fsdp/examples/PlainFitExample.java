package ai.djl.fsdp.examples;

import ai.djl.Model;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.EasyTrain;
import ai.djl.training.Trainer;
import ai.djl.translate.TranslateException;
import java.io.IOException;

/**
 * {@link FsdpFitExample} before its three FSDP lines: the same classifier trained by DJL's own
 * {@code Trainer} in one process, with nothing of this project's in the way. The GPU kit runs it
 * first, on a freshly built DJL JNI: does DJL itself run on this libtorch?
 */
public final class PlainFitExample {

    private PlainFitExample() {}

    /**
     * Trains the classifier on DJL's default device and prints its accuracy on held-out points.
     *
     * @param args unused
     * @throws IOException if the dataset cannot be read
     * @throws TranslateException if a batch cannot be made
     */
    public static void main(String[] args) throws IOException, TranslateException {
        try (Model model = Model.newInstance("classifier");
                NDManager manager = NDManager.newBaseManager()) {
            model.setBlock(FsdpFitExample.classifier());
            try (Trainer trainer = model.newTrainer(FsdpFitExample.config())) {
                trainer.initialize(new Shape(64, 32));
                EasyTrain.fit(
                        trainer,
                        3,
                        FsdpFitExample.dataset(manager, 4096, FsdpFitExample.TRAIN_SEED),
                        FsdpFitExample.dataset(manager, 512, FsdpFitExample.VALIDATE_SEED));
                System.out.println(
                        "validation accuracy "
                                + trainer.getTrainingResult().getValidateEvaluation("Accuracy")
                                + " on "
                                + manager.getDevice());
            }
        }
    }
}
