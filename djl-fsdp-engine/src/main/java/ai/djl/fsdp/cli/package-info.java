/**
 * The {@code bin/fsdp} command line: its entry point ({@link ai.djl.fsdp.cli.Fsdp}) and the {@link
 * ai.djl.fsdp.cli.Subcommand} interface through which each module adds its commands.
 */
package ai.djl.fsdp.cli;
