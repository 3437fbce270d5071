package ai.djl.fsdp.zoo.finetune.report;

/**
 * The figures a run ends with, for its summary: the train loss of its last step, its eval losses
 * (first, last, best) and its throughput over the steps this process ran. The recipe's listeners
 * record them as the run goes.
 */
public final class Outcome {

    private final int steps;
    private double firstEvalLoss = Double.NaN;
    private double lastEvalLoss = Double.NaN;
    private double bestEvalLoss = Double.NaN;
    private double lastLoss = Double.NaN;
    private long tokens;
    private double seconds;

    /**
     * Creates the outcome of a run.
     *
     * @param steps the run's optimizer steps
     */
    public Outcome(int steps) {
        this.steps = steps;
    }

    /**
     * Records an optimizer step.
     *
     * @param loss the step's loss
     * @param stepTokens its tokens over all ranks
     * @param stepSeconds its wall time
     */
    public void recordStep(double loss, long stepTokens, double stepSeconds) {
        lastLoss = loss;
        tokens += stepTokens;
        seconds += stepSeconds;
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

    /** Returns the tokens trained on per second over the steps this process ran so far. */
    public double getTokensPerSecond() {
        return tokens / Math.max(seconds, 1e-9);
    }

    /** Returns the run's optimizer steps. */
    public int getSteps() {
        return steps;
    }
}
