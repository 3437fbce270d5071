package ai.djl.fsdp.cli;

import java.util.concurrent.Callable;

/**
 * A subcommand of {@code bin/fsdp}: a picocli {@code @Command} whose {@code call()} returns the
 * exit code. Each module lists its subcommands in {@code
 * META-INF/services/ai.djl.fsdp.cli.Subcommand}; the entry point finds them with {@link
 * java.util.ServiceLoader}, so the command line holds whatever modules are on the class path.
 */
public interface Subcommand extends Callable<Integer> {}
