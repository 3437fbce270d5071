package ai.djl.fsdp.spark;

import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * {@code finetune --resume_from_checkpoint} without a directory, on Spark: resume from the newest
 * complete checkpoint in {@code --output_dir} when there is one, and start afresh when there is
 * none. Each attempt of the barrier stage resolves it when its ranks start, so a first attempt
 * trains from the start and a retried attempt (after a rank or its executor died) continues from
 * the last checkpoint the failed attempt completed.
 */
final class ResumeFlag {

    static final String FLAG = "--resume_from_checkpoint";
    private static final String OUTPUT_DIR = "--output_dir";

    private ResumeFlag() {}

    /**
     * Returns {@code command} with a bare {@value #FLAG} (or {@code True}) replaced by the newest
     * complete checkpoint in its {@code --output_dir}, or removed when there is none; any other
     * command unchanged.
     *
     * @param command the main class and its arguments
     * @return the command to run now
     */
    static List<String> resolve(List<String> command) {
        int flag = command.indexOf(FLAG);
        boolean withValue = flag >= 0 && flag + 1 < command.size() && isTrue(command.get(flag + 1));
        boolean bare =
                flag >= 0 && (flag + 1 == command.size() || command.get(flag + 1).startsWith("--"));
        int equals = command.indexOf(FLAG + "=True");
        if (!withValue && !bare && equals < 0) {
            return command;
        }
        Optional<Path> newest = outputDir(command).flatMap(CheckpointDirectory::newest);
        List<String> resolved = new ArrayList<>(command);
        if (equals >= 0) {
            resolved.remove(equals);
        } else {
            if (withValue) {
                resolved.remove(flag + 1);
            }
            resolved.remove(flag);
        }
        newest.ifPresent(
                checkpoint -> {
                    resolved.add(FLAG);
                    resolved.add(checkpoint.toString());
                });
        return resolved;
    }

    private static boolean isTrue(String value) {
        return "true".equalsIgnoreCase(value);
    }

    private static Optional<Path> outputDir(List<String> command) {
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
