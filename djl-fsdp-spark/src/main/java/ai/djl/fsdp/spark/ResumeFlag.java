package ai.djl.fsdp.spark;

import ai.djl.fsdp.cli.Fsdp;
import ai.djl.fsdp.trainer.CheckpointListener;
import java.io.Serializable;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * {@code finetune --resume_from_checkpoint} without a directory, on Spark: resume from the newest
 * complete checkpoint in {@code --output_dir} when there is one, and start afresh when there is
 * none. Rank 0 {@linkplain #choose() chooses} when an attempt of the barrier stage starts and tells
 * every rank through the barrier (see {@link BarrierRendezvous}), so all ranks of an attempt resume
 * from the same step even if a checkpoint completes or is pruned while they start: a first attempt
 * trains from the start, and a retried attempt (after a rank or its executor died) continues from
 * the last checkpoint the failed attempt completed. Other commands run as given.
 */
final class ResumeFlag implements Serializable {

    private static final long serialVersionUID = 1L;

    static final String FLAG = "--resume_from_checkpoint";
    private static final String OUTPUT_DIR = "--output_dir";
    private static final List<String> FINETUNE = List.of(Fsdp.class.getName(), "finetune");

    private final List<String> command;
    private final int flag;
    private final int width;

    private ResumeFlag(List<String> command, int flag, int width) {
        this.command = List.copyOf(command);
        this.flag = flag;
        this.width = width;
    }

    /**
     * Finds the flag to resolve in {@code command}: a bare {@value #FLAG}, {@code FLAG true} or
     * {@code FLAG=true} (any case) in a {@code finetune} command.
     *
     * @param command the main class and its arguments
     * @return the command and where its flag is, if it has one to resolve
     */
    static ResumeFlag of(List<String> command) {
        if (command.size() < 2 || !command.subList(0, 2).equals(FINETUNE)) {
            return new ResumeFlag(command, -1, 0);
        }
        for (int i = 2; i < command.size(); i++) {
            String argument = command.get(i);
            if (argument.equals(FLAG)) {
                if (i + 1 == command.size() || command.get(i + 1).startsWith("--")) {
                    return new ResumeFlag(command, i, 1);
                }
                return new ResumeFlag(command, isTrue(command.get(i + 1)) ? i : -1, 2);
            }
            if (argument.startsWith(FLAG + "=")) {
                return new ResumeFlag(
                        command, isTrue(argument.substring(FLAG.length() + 1)) ? i : -1, 1);
            }
        }
        return new ResumeFlag(command, -1, 0);
    }

    /**
     * Chooses the checkpoint every rank of this attempt resumes from: rank 0 calls it once.
     *
     * @return the newest complete checkpoint in the command's {@code --output_dir}, or empty to
     *     start afresh (and for a command with no flag to resolve)
     */
    Optional<Path> choose() {
        if (flag < 0) {
            return Optional.empty();
        }
        return outputDir().flatMap(CheckpointListener::newestCheckpoint);
    }

    /**
     * Returns the command to run: the flag replaced by {@code checkpoint}, or removed when it is
     * empty; a command with no flag to resolve as given.
     *
     * @param checkpoint what rank 0 {@linkplain #choose() chose}
     * @return the main class and its arguments
     */
    List<String> command(Optional<Path> checkpoint) {
        if (flag < 0) {
            return command;
        }
        List<String> resolved = new ArrayList<>(command);
        resolved.subList(flag, flag + width).clear();
        checkpoint.ifPresent(
                path -> {
                    resolved.add(FLAG);
                    resolved.add(path.toString());
                });
        return resolved;
    }

    private static boolean isTrue(String value) {
        return "true".equalsIgnoreCase(value);
    }

    private Optional<Path> outputDir() {
        for (int i = 0; i < command.size(); i++) {
            String argument = command.get(i);
            if (argument.equals(OUTPUT_DIR) && i + 1 < command.size()) {
                return Optional.of(Path.of(command.get(i + 1)));
            }
            if (argument.startsWith(OUTPUT_DIR + "=")) {
                return Optional.of(Path.of(argument.substring(OUTPUT_DIR.length() + 1)));
            }
        }
        return Optional.empty();
    }
}
