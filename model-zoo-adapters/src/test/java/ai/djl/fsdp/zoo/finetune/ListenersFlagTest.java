package ai.djl.fsdp.zoo.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code --listeners}: a user's DJL listener hears the run's events, with the step's global loss; a
 * class that cannot be one is named with the fix before anything runs.
 */
class ListenersFlagTest {

    private static final Pattern STEP = Pattern.compile("step=(\\d+) epoch=\\S+ loss=([0-9.]+)");

    @Test
    void aUsersListenerHearsEveryStepEpochAndEvaluation(@TempDir Path directory) throws Exception {
        // One train and one eval sequence, a batch of one: every step ends an epoch.
        Path text = Files.writeString(directory.resolve("two.txt"), "abcdef\nghijkl\n");
        StringWriter out = new StringWriter();
        CommandLine line = new CommandLine(new FinetuneCommand());
        line.setOut(new PrintWriter(out));
        RecordingListener.CREATED.clear();
        int code =
                line.execute(
                        "--dataset_name", text.toString(),
                        "--validation_split_percentage", "50",
                        "--per_device_train_batch_size", "1",
                        "--max_steps", "3",
                        "--logging_steps", "1",
                        "--eval_strategy", "steps",
                        "--eval_steps", "2",
                        "--exact_match_samples", "0",
                        "--listeners", RecordingListener.class.getName(),
                        "--output_dir", directory.resolve("out").toString());
        assertEquals(0, code, out.toString());
        assertEquals(1, RecordingListener.CREATED.size());
        RecordingListener heard = RecordingListener.CREATED.get(0);
        assertEquals(1, heard.trainingBegins);
        assertEquals(3, heard.trainingBatches);
        assertEquals(3, heard.epochs);
        // Before training, after step 2 and after the last: one eval batch each.
        assertEquals(3, heard.validationBatches);
        assertEquals(1, heard.trainingEnds);
        List<String> printed = new ArrayList<>();
        Matcher step = STEP.matcher(out.toString());
        while (step.find()) {
            printed.add(step.group(2));
        }
        List<String> seen = new ArrayList<>();
        heard.losses.forEach(loss -> seen.add(String.format(Locale.ROOT, "%.4f", loss)));
        assertEquals(printed, seen, "the listener sees the logged loss of every step: " + out);
    }

    @Test
    void aClassThatIsNoListenerIsNamedWithTheFix() {
        assertFails(
                "--listeners com.example.NoSuchListener is not on the class path; add its jar"
                        + " or classes directory with bin/fsdp launch --classpath",
                "com.example.NoSuchListener");
        assertFails(
                "--listeners java.lang.StringBuilder is not an"
                        + " ai.djl.training.listener.TrainingListener",
                "java.lang.StringBuilder");
        assertFails(
                "--listeners "
                        + NeedsArgument.class.getName()
                        + " has no public no-arg constructor; give it one",
                NeedsArgument.class.getName());
    }

    private static void assertFails(String expected, String listener) {
        FinetuneCommand command = new FinetuneCommand();
        new CommandLine(command)
                .parseArgs("--output_dir", "never", "--max_steps", "1", "--listeners", listener);
        IllegalArgumentException error =
                assertThrows(IllegalArgumentException.class, command::call);
        assertTrue(error.getMessage().startsWith(expected), error.getMessage());
    }

    /** A listener without a no-arg constructor. */
    public static final class NeedsArgument
            extends ai.djl.training.listener.TrainingListenerAdapter {
        /**
         * Creates it.
         *
         * @param name unused by the test
         */
        public NeedsArgument(String name) {}
    }
}
