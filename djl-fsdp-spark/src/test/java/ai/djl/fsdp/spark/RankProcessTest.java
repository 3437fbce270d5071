package ai.djl.fsdp.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import ai.djl.fsdp.dist.CollectiveException;
import ai.djl.fsdp.launch.rank.FailureReport;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A rank JVM's failure carries the message it wrote and, when it blames another rank, that rank:
 * what lets its barrier task defer to the blamed rank's own report.
 */
class RankProcessTest {

    @Test
    void aReportThatBlamesAnotherRankNamesIt(@TempDir Path dir) throws IOException {
        Path report = dir.resolve("rank0.failure");
        Files.writeString(report, "message=rank 1 closed its link\nfailedRank=1\n");
        RuntimeException failure = RankProcess.failure(3, FailureReport.read(report));
        CollectiveException collective = assertInstanceOf(CollectiveException.class, failure);
        assertEquals(OptionalInt.of(1), collective.getFailedRank());
        assertEquals(OptionalInt.of(1), CollectiveException.failedRankOf(failure));
        assertEquals("its JVM exited with code 3: rank 1 closed its link", failure.getMessage());
    }

    @Test
    void aReportThatBlamesNoRankOrNoReportIsTheRanksOwnFailure(@TempDir Path dir)
            throws IOException {
        Path report = dir.resolve("rank1.failure");
        Files.writeString(report, "message=the data ran out\nfailedRank=-1\n");
        RuntimeException own = RankProcess.failure(2, FailureReport.read(report));
        assertInstanceOf(IllegalStateException.class, own);
        assertEquals("its JVM exited with code 2: the data ran out", own.getMessage());
        assertEquals(OptionalInt.empty(), CollectiveException.failedRankOf(own));

        RuntimeException silent = RankProcess.failure(137, Optional.empty());
        assertEquals(
                "its JVM exited with code 137 (it wrote no message: see the executor's log)",
                silent.getMessage());
    }
}
