package ai.djl.fsdp.zoo.lora;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.ParameterCount;
import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.MixedPrecision;
import ai.djl.fsdp.trainer.ShardingStats;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.gpt2.GPT2Config;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Parameter;
import ai.djl.util.Pair;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A LoRA model under bfloat16 mixed precision keeps its frozen base in bfloat16 only: the bytes
 * each rank holds, the ratio on the benchmark's GPT-2, and (on two ranks, {@link LoraBf16Checks})
 * training, adapters, sharded checkpoints and merged weights.
 */
class FrozenBf16Test {

    @Test
    void frozenBaseIsHeldInBfloat16OnlyAndAdaptersInFloat32() {
        ParameterCount count;
        ShardingStats bf16;
        ShardingStats fp32;
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            count = countOf("gpt2-tiny");
            bf16 = statsAfterOneStep(group, MixedPrecision.BF16, true);
            fp32 = statsAfterOneStep(group, MixedPrecision.BF16, false);
        }
        long frozen = count.all() - count.trainable();
        long trainable = count.trainable();
        // One rank: no padding. Frozen: 2 bytes each, no gradient, no optimizer state.
        assertEquals(2 * frozen + 4 * trainable, bf16.parameterBytes());
        assertEquals(4 * trainable, bf16.gradientBytes());
        assertEquals(8 * trainable, bf16.optimizerStateBytes(), "AdamW: m and v");
        // The option off keeps float32 master shards of the frozen base too.
        assertEquals(4 * frozen + 4 * trainable, fp32.parameterBytes());
        assertEquals(bf16.gradientBytes(), fp32.gradientBytes());
        assertEquals(bf16.optimizerStateBytes(), fp32.optimizerStateBytes());
        // A replica is described in the parameters' own type whatever the storage.
        assertEquals(4 * count.all(), bf16.unshardedParameterBytes());
    }

    /**
     * The benchmark's GPT-2 (6 layers, width 384, vocabulary 50257, 128 positions) with rank-8
     * all-linear adapters: the model state per rank in bfloat16 is at most 0.55 of float32's. Read
     * from the sharding alone, before training; a step adds a float32 gradient and AdamW's two
     * moments for the adapters only, the same bytes in both precisions.
     */
    @Test
    void benchmarkShapeLoraStateIsAtMost055OfFloat32() {
        long bf16;
        long fp32;
        long trainable;
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            GPT2Config shape = GPT2Config.of(6, 384, 6, 128);
            bf16 = LoraBf16Checks.shardedParameterBytes(shape, MixedPrecision.BF16, group);
            fp32 = LoraBf16Checks.shardedParameterBytes(shape, MixedPrecision.FP32, group);
            try (NDManager manager = TestModels.newManager()) {
                CausalLM lm = Models.create(shape, manager);
                Lora.apply(lm, LoraBf16Checks.lora(8));
                trainable = Lora.count(lm).trainable();
            }
        }
        long afterStep = trainable * (4 + 8);
        double ratio = (double) (bf16 + afterStep) / (fp32 + afterStep);
        System.out.printf(
                "GPT-2 bench shape, LoRA r=8: model state fp32 %.1f MB, bf16 %.1f MB, ratio %.3f%n",
                (fp32 + afterStep) / 1e6, (bf16 + afterStep) / 1e6, ratio);
        assertTrue(ratio <= 0.55, "bf16/fp32 LoRA model state " + ratio);
    }

    /**
     * The checks on two ranks; then one rank resumes the sharded checkpoint they saved, its frozen
     * base stored in bfloat16, exactly.
     */
    @Test
    void twoRanks(@TempDir Path directory) throws IOException {
        Path checkpoint = directory.resolve("checkpoint-2");
        try (RankProcesses job =
                RankProcesses.builder(LoraBf16Checks.class)
                        .worldSize(2)
                        .args(checkpoint.toString())
                        .timeout(Duration.ofMinutes(6))
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            assertTrue(results.rank(1).output().contains("checks passed"));
        }
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            LoraBf16Checks.resumesWhatTwoRanksSaved(group, checkpoint);
        }
    }

    private static ParameterCount countOf(String name) {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM lm = TestModels.seeded(name, manager, 1);
            Lora.apply(lm, LoraBf16Checks.lora(4));
            return Lora.count(lm);
        }
    }

    private static ShardingStats statsAfterOneStep(
            ProcessGroup group, MixedPrecision precision, boolean frozenInComputePrecision) {
        try (Model model = Model.newInstance("gpt2-tiny", Device.cpu());
                NDManager manager = TestModels.newManager()) {
            CausalLM lm = TestModels.seeded("gpt2-tiny", model.getNDManager(), 1);
            Lora.apply(lm, LoraBf16Checks.lora(4));
            model.setBlock(lm);
            try (FsdpTrainer trainer =
                    LoraBf16Checks.newTrainer(
                            model,
                            ShardingStrategy.FULL_SHARD,
                            precision,
                            frozenInComputePrecision,
                            true,
                            group,
                            null)) {
                for (Pair<String, Parameter> pair : lm.getParameters()) {
                    // No float32 copy is left behind: the shards are the only copy.
                    assertEquals(0, pair.getValue().getArray().size(), pair.getKey());
                }
                LoraBf16Checks.step(trainer, manager, 3);
                return trainer.getShardingStats();
            }
        }
    }
}
