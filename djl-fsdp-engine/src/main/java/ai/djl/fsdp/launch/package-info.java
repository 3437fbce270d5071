/**
 * The launcher of one node's ranks, like {@code torchrun}: {@link ai.djl.fsdp.launch.Launcher}
 * starts each rank as a JVM and {@link ai.djl.fsdp.launch.LaunchedJob} waits on them; {@code
 * bin/fsdp launch} ({@link ai.djl.fsdp.launch.LaunchCommand}) is its command line, with
 * Accelerate's config file and flags and Slurm steps. What a rank's own process shares with its
 * launcher is in {@link ai.djl.fsdp.launch.rank}.
 */
package ai.djl.fsdp.launch;
