/**
 * What the GPT-2 benchmarks ({@code bench train} and {@code bench checkpoint}) share, so that each
 * is declared once: the model's shape and batch ({@link ai.djl.fsdp.bench.gpt.GptShape}), the
 * options that set them ({@link ai.djl.fsdp.bench.gpt.GptOptions}), and a rank's setup ({@link
 * ai.djl.fsdp.bench.gpt.GptRank}: the job, the seeded model, AdamW, FSDP's wrap policy, a training
 * step on random tokens, the report file). Depends on the trainer and the model zoo's GPT-2, none
 * of the benchmarks.
 */
package ai.djl.fsdp.bench.gpt;
