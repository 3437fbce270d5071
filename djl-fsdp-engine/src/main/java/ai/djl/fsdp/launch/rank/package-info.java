/**
 * What a rank's process and the launcher that started it agree on, used on both sides: the rank's
 * share of the machine's cores ({@link ai.djl.fsdp.launch.rank.RankThreads}) and the failure report
 * a failing rank leaves for the launcher ({@link ai.djl.fsdp.launch.rank.FailureReport}).
 */
package ai.djl.fsdp.launch.rank;
