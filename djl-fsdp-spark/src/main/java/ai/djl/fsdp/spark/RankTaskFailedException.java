package ai.djl.fsdp.spark;

import ai.djl.fsdp.dist.DistributedEnv;

/**
 * A rank's training failed in its Spark task: the barrier task fails with this, so the stage's
 * failure (and the driver's exception, which carries its text) names the rank, the stage attempt
 * and the cause's messages. It is the rank's own report to Spark's scheduler, which then stops the
 * other tasks; the launcher's verdict on a job whose rank process exited, with the exit code {@code
 * bin/fsdp launch} returns, is the engine's {@link ai.djl.fsdp.launch.RankFailedException}.
 */
final class RankTaskFailedException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    RankTaskFailedException(SparkRank rank, Throwable cause) {
        super(message(rank.getEnv(), rank.getStageAttempt(), cause), cause);
    }

    private static String message(DistributedEnv env, int stageAttempt, Throwable cause) {
        StringBuilder message =
                new StringBuilder("djl-fsdp rank ")
                        .append(env.getRank())
                        .append(" of ")
                        .append(env.getWorldSize())
                        .append(" failed (stage attempt ")
                        .append(stageAttempt)
                        .append(')');
        for (Throwable c = cause; c != null; c = c.getCause()) {
            String text = c.getMessage() != null ? c.getMessage() : c.toString();
            if (!message.toString().contains(text)) {
                message.append(": ").append(text);
            }
        }
        return message.toString();
    }
}
