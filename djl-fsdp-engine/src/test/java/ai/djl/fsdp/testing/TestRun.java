package ai.djl.fsdp.testing;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectMethod;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import org.junit.platform.engine.DiscoverySelector;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;

/**
 * Runs the project's tests named on the command line where Maven is not (the GPU kit): each
 * argument a test class ({@code ai.djl.fsdp.trainer.HybridShardingTest}) or one method of it
 * ({@code ...CheckpointResumeTest#resumesExactlyOnTheSameRanksAndElasticallyOnOthers}). Prints a
 * line per test with its outcome (a skipped test with its reason) and a summary; exits 1 when any
 * test failed or none ran.
 */
public final class TestRun {

    private TestRun() {}

    public static void main(String[] args) {
        List<DiscoverySelector> selectors = new ArrayList<>();
        for (String name : args) {
            selectors.add(name.contains("#") ? selectMethod(name) : selectClass(name));
        }
        SummaryGeneratingListener summary = new SummaryGeneratingListener();
        TestExecutionListener outcomes =
                new TestExecutionListener() {
                    @Override
                    public void executionSkipped(TestIdentifier test, String reason) {
                        System.out.println("SKIPPED " + test.getDisplayName() + ": " + reason);
                    }

                    @Override
                    public void executionFinished(TestIdentifier test, TestExecutionResult result) {
                        if (test.isTest() || result.getThrowable().isPresent()) {
                            System.out.println(
                                    result.getStatus()
                                            + " "
                                            + test.getLegacyReportingName()
                                            + result.getThrowable().map(e -> ": " + e).orElse(""));
                        }
                    }
                };
        Launcher launcher = LauncherFactory.create();
        launcher.execute(
                LauncherDiscoveryRequestBuilder.request().selectors(selectors).build(),
                summary,
                outcomes);
        summary.getSummary().printTo(new PrintWriter(System.out, true));
        summary.getSummary().printFailuresTo(new PrintWriter(System.out, true), 40);
        long failed = summary.getSummary().getTotalFailureCount();
        System.out.flush();
        System.exit(failed == 0 && summary.getSummary().getTestsSucceededCount() > 0 ? 0 : 1);
    }
}
