package ai.djl.fsdp.dist.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.engine.Engine;
import ai.djl.fsdp.launch.Launcher;
import ai.djl.fsdp.rendezvous.TcpStore;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs {@link NcclRankCheck} on one rank per GPU (at most two), skipped without a GPU; and checks
 * on any machine that communicators set up in turn through one store do not share a unique id.
 */
class NcclProcessGroupTest {

    @Test
    void eachCommunicatorOnAStoreGetsItsOwnUniqueIdKey() {
        try (TcpStore store =
                TcpStore.builder("127.0.0.1", 0).optHostServer(true).optToken("t").build()) {
            List<String> keys = new ArrayList<>();
            // Two communicators of three ranks, joined in turn.
            for (int join = 0; join < 6; join++) {
                keys.add(NcclProcessGroup.uniqueIdKey(store, 3));
            }
            String first = NcclProcessGroup.UNIQUE_ID_KEY_PREFIX + 0;
            String second = NcclProcessGroup.UNIQUE_ID_KEY_PREFIX + 1;
            assertEquals(List.of(first, first, first, second, second, second), keys);
        }
    }

    @Test
    @Timeout(300)
    void everyCollectiveGivesTheExpectedValuesOnGpus() throws InterruptedException {
        int gpus = Engine.getEngine("PyTorch").getGpuCount();
        Assumptions.assumeTrue(gpus > 0, "no CUDA device: the NCCL backend needs a GPU");
        Assumptions.assumeTrue(
                NcclProcessGroup.isAvailable(),
                "a GPU but no NCCL natives: run the tests with `mvn -Pcuda`");

        Launcher.builder()
                .setNprocPerNode(Math.min(2, gpus))
                .setCommand(NcclRankCheck.class.getName())
                .optJavaOptions(List.of("-Xmx512m"))
                .build()
                .run();
    }
}
