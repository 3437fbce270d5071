package ai.djl.fsdp.zoo.finetune.report;

/**
 * The figures a run ends with, for its summary: the train loss of its last step, its eval losses
 * (first, last, best) and its throughput. The training loop records them as it goes.
 */
public final class Outcome {

    private double firstEvalLoss = Double.NaN;
    private double lastEvalLoss = Double.NaN;
    private double bestEvalLoss = Double.NaN;
    private double lastLoss = Double.NaN;
    private double tokensPerSecond;
    private int steps;

    /**
     * Records a step's train loss.
     *
     * @param loss the step's loss
     */
    public void recordLoss(double loss) {
        lastLoss = loss;
    }

    /**
     * Records an evaluation's loss.
     *
     * @param loss the eval split's mean loss
     */
    public void recordEvalLoss(double loss) {
        if (Double.isNaN(firstEvalLoss)) {
            firstEvalLoss = loss;
        }
        lastEvalLoss = loss;
        if (Double.isNaN(bestEvalLoss) || loss < bestEvalLoss) {
            bestEvalLoss = loss;
        }
    }

    /**
     * Records the end of training.
     *
     * @param steps the run's optimizer steps
     * @param tokensPerSecond the tokens trained on per second over the steps this process ran
     */
    public void finish(int steps, double tokensPerSecond) {
        this.steps = steps;
        this.tokensPerSecond = tokensPerSecond;
    }

    /** Returns the eval loss before training, or NaN without evaluation. */
    public double getFirstEvalLoss() {
        return firstEvalLoss;
    }

    /** Returns the last eval loss, or NaN without evaluation. */
    public double getLastEvalLoss() {
        return lastEvalLoss;
    }

    /** Returns the lowest eval loss, or NaN without evaluation. */
    public double getBestEvalLoss() {
        return bestEvalLoss;
    }

    /** Returns the last step's train loss. */
    public double getLastLoss() {
        return lastLoss;
    }

    /** Returns the tokens trained on per second. */
    public double getTokensPerSecond() {
        return tokensPerSecond;
    }

    /** Returns the run's optimizer steps. */
    public int getSteps() {
        return steps;
    }
}
