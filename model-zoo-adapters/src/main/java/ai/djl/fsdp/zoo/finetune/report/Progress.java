package ai.djl.fsdp.zoo.finetune.report;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;

/**
 * Rank 0's progress bar (steps, ETA, and the loss, learning rate and tokens per second as extra
 * text). It draws on the terminal the job was started from ({@code /dev/tty}), since a rank's
 * standard output reaches the user line by line through the launcher; without a terminal (CI,
 * tests, redirected output) there is no bar, only the log lines.
 */
public final class Progress implements AutoCloseable {

    private final ProgressBar bar;
    private final PrintStream terminal;

    private Progress(ProgressBar bar, PrintStream terminal) {
        this.bar = bar;
        this.terminal = terminal;
    }

    /**
     * Opens a bar if this process has a terminal and {@code enabled}; otherwise one that does
     * nothing.
     *
     * @param total the steps of the run
     * @param enabled false on ranks other than 0
     * @return the bar
     */
    public static Progress open(long total, boolean enabled) {
        return open("finetune", total, enabled);
    }

    /**
     * Opens a bar named {@code task} if this process has a terminal and {@code enabled}; otherwise
     * one that does nothing.
     *
     * @param task the bar's name
     * @param total the steps of the task
     * @param enabled false on ranks other than 0
     * @return the bar
     */
    public static Progress open(String task, long total, boolean enabled) {
        if (!enabled || System.getenv("FSDP_NO_PROGRESS") != null) {
            return new Progress(null, null);
        }
        PrintStream terminal;
        try {
            terminal =
                    new PrintStream(new FileOutputStream("/dev/tty"), true, StandardCharsets.UTF_8);
        } catch (IOException | SecurityException e) {
            return new Progress(null, null);
        }
        ProgressBar bar =
                new ProgressBarBuilder()
                        .setTaskName(task)
                        .setInitialMax(total)
                        .setStyle(ProgressBarStyle.ASCII)
                        .setUpdateIntervalMillis(500)
                        .setConsumer(new ConsoleProgressBarConsumer(terminal, 110))
                        .build();
        return new Progress(bar, terminal);
    }

    /**
     * Moves to a step and shows the latest figures.
     *
     * @param step the step reached
     * @param extra the loss, learning rate and throughput as text
     */
    public void update(long step, String extra) {
        if (bar != null) {
            bar.stepTo(step);
            bar.setExtraMessage(extra);
        }
    }

    @Override
    public void close() {
        if (bar != null) {
            bar.close();
            terminal.flush();
        }
    }
}
