package ai.djl.fsdp.zoo.generate;

import picocli.CommandLine;

/** One rank of {@code generate} launched on several ranks, for {@link GeneratorTest}. */
public final class ShardedGenerateMain {

    private ShardedGenerateMain() {}

    /**
     * Runs {@code generate} with the given arguments and exits with its code.
     *
     * @param args {@code generate}'s arguments
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new GenerateCommand()).execute(args));
    }
}
