package ai.djl.fsdp.bench;

import ai.djl.fsdp.bench.attention.AttentionBenchCommand;
import ai.djl.fsdp.bench.checkpoint.CheckpointBenchCommand;
import ai.djl.fsdp.bench.ops.OpsBenchCommand;
import ai.djl.fsdp.bench.train.TrainBenchCommand;
import ai.djl.fsdp.cli.Subcommand;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code bin/fsdp bench}: the multi-process benchmarks, one subcommand each. */
@Command(
        name = "bench",
        mixinStandardHelpOptions = true,
        description = "Runs a multi-process benchmark.",
        synopsisSubcommandLabel = "BENCHMARK",
        subcommands = {
            CollectivesBenchCommand.class,
            TrainBenchCommand.class,
            AttentionBenchCommand.class,
            CheckpointBenchCommand.class,
            OpsBenchCommand.class
        })
public final class BenchCommand implements Subcommand {

    @Spec private CommandSpec spec;

    @Override
    public Integer call() {
        throw new ParameterException(spec.commandLine(), "Missing benchmark.");
    }
}
