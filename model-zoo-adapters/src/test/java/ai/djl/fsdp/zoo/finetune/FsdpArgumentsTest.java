package ai.djl.fsdp.zoo.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.trainer.ActivationCheckpointing;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.zoo.finetune.args.FsdpArguments;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code --sharding_strategy} as Accelerate writes it: a name or PyTorch's number; {@code
 * --gradient_checkpointing} apart from it.
 */
class FsdpArgumentsTest {

    private static FsdpArguments parse(String... args) {
        FsdpArguments fsdp = new FsdpArguments();
        CommandLine line = new CommandLine(CommandSpec.create());
        line.addMixin("fsdp", fsdp);
        line.parseArgs(args);
        return fsdp;
    }

    private static ShardingStrategy strategy(String value) {
        return parse("--sharding_strategy", value).strategy();
    }

    @Test
    void gradientCheckpointingIsItsOwnSettingWhateverTheStrategy() {
        assertEquals(Optional.empty(), parse().activationCheckpointing(), "the trainer's default");
        for (String strategy : new String[] {"FULL_SHARD", "SHARD_GRAD_OP", "HYBRID_SHARD"}) {
            assertEquals(
                    Optional.of(ActivationCheckpointing.none()),
                    parse("--sharding_strategy", strategy, "--gradient_checkpointing", "False")
                            .activationCheckpointing(),
                    strategy);
            assertEquals(
                    Optional.of(ActivationCheckpointing.everyUnit()),
                    parse("--sharding_strategy", strategy, "--gradient_checkpointing")
                            .activationCheckpointing(),
                    strategy);
        }
    }

    @Test
    void namesAndNumbersSelectEveryStrategyHybridIncluded() {
        assertEquals(ShardingStrategy.FULL_SHARD, strategy("1"));
        assertEquals(ShardingStrategy.SHARD_GRAD_OP, strategy("2"));
        assertEquals(ShardingStrategy.NO_SHARD, strategy("3"));
        assertEquals(ShardingStrategy.HYBRID_SHARD, strategy("4"));
        assertEquals(ShardingStrategy.HYBRID_SHARD_ZERO2, strategy("5"));
        assertEquals(ShardingStrategy.HYBRID_SHARD, strategy("hybrid_shard"));
        assertEquals(ShardingStrategy.HYBRID_SHARD_ZERO2, strategy("HYBRID_SHARD_ZERO2"));
        IllegalArgumentException unknown =
                assertThrows(IllegalArgumentException.class, () -> strategy("6"));
        assertTrue(unknown.getMessage().contains("HYBRID_SHARD_ZERO2 (5)"), unknown.getMessage());
    }
}
