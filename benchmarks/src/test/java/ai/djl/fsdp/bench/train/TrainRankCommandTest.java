package ai.djl.fsdp.bench.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import ai.djl.fsdp.bench.gpt.GptOptions;
import ai.djl.fsdp.bench.gpt.GptRank;
import ai.djl.fsdp.bench.gpt.GptShape;
import ai.djl.fsdp.bench.ranks.BenchRanks;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** The options a command re-emits reach its ranks' mixins unchanged. */
class TrainRankCommandTest {

    @Command(name = "user")
    static final class UserSide {
        @Mixin GptOptions gpt = new GptOptions(2, new GptShape(6, 384, 6, 50257, 128, 8));
        @Mixin TrainOptions training;
    }

    @Command(name = "rank")
    static final class RankSide {
        @Mixin GptOptions gpt = new GptOptions();
        @Mixin TrainOptions training;
        @Mixin GptRank rank = new GptRank();
    }

    private static RankSide roundTrip(String... userArgs) {
        UserSide user = new UserSide();
        new CommandLine(user).parseArgs(userArgs);
        List<String> command =
                BenchRanks.rankCommand(
                        TrainBenchRank.class, user.gpt, user.training, new GptRank(Path.of("r")));
        assertEquals(TrainBenchRank.class.getName(), command.get(0));
        RankSide rank = new RankSide();
        new CommandLine(rank).parseArgs(command.subList(1, command.size()).toArray(new String[0]));
        assertEquals(user.training.settings(2, user.gpt), rank.training.settings(2, rank.gpt));
        assertEquals(Path.of("r"), rank.rank.report());
        return rank;
    }

    @Test
    void defaultsReachTheRankAndUnsetOverridesStayUnset() {
        RankSide rank = roundTrip();
        TrainBenchSettings settings = rank.training.settings(2, rank.gpt);
        assertEquals(new GptShape(6, 384, 6, 50257, 128, 8), settings.shape());
        assertEquals(2, settings.warmup());
        assertNull(settings.reshardAfterForward());
        assertNull(settings.activationCheckpointing());
    }

    @Test
    void everyGivenOptionReachesTheRank() {
        RankSide rank =
                roundTrip(
                        "--layers=3",
                        "--width=48",
                        "--heads=4",
                        "--vocab=99",
                        "--seq=7",
                        "--batch=5",
                        "--warmup=0",
                        "--sharding=SHARD_GRAD_OP",
                        "--steps=4",
                        "--attention=sdpa",
                        "--precision=bf16",
                        "--reshard-after-forward=true",
                        "--activation-checkpointing=every:2",
                        "--lora-rank=8");
        TrainBenchSettings settings = rank.training.settings(2, rank.gpt);
        assertEquals(new GptShape(3, 48, 4, 99, 7, 5), settings.shape());
        assertEquals("every:2", settings.checkpointing().toString());
        assertEquals(8, settings.loraRank());
    }

    static final class Repeated {
        @Option(names = "--many")
        List<String> many = List.of("a", "b");
    }

    @Test
    void optionsOfSeveralValuesAreRefused() {
        assertThrows(
                IllegalArgumentException.class,
                () -> BenchRanks.rankCommand(TrainBenchRank.class, new Repeated()));
    }
}
