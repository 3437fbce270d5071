/**
 * What a {@code finetune} run tells the user: the progress bar, the metrics log ({@code
 * metrics.jsonl}), the training curves, the exact-match results, the peak memory and the summary
 * ({@code summary.json}).
 */
package ai.djl.fsdp.zoo.finetune.report;
