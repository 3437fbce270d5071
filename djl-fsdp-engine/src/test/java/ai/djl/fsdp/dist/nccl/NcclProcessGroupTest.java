package ai.djl.fsdp.dist.nccl;

import ai.djl.engine.Engine;
import ai.djl.fsdp.launch.Launcher;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

/** Runs {@link NcclRankCheck} on one rank per GPU (at most two); skipped without a GPU. */
class NcclProcessGroupTest {

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
