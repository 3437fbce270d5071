package ai.djl.fsdp.zoo.finetune.report;

/**
 * The result of an exact-match evaluation: how many of the held-out questions the model answered
 * exactly as the reference does.
 *
 * @param correct replies equal to the reference
 * @param total questions asked
 * @param question rank 0's first question
 * @param reply the model's reply to it
 * @param seconds the evaluation's wall time
 */
public record ExactMatch(long correct, long total, String question, String reply, double seconds) {

    /**
     * Returns the share of correct replies.
     *
     * @return the accuracy, NaN when no question was asked
     */
    public double accuracy() {
        return total == 0 ? Double.NaN : correct / (double) total;
    }
}
