/**
 * The peak resident memory of loading a Hugging Face checkpoint ({@link
 * ai.djl.fsdp.bench.load.LoadMemoryMain}): a 124M-parameter GPT-2 loaded whole into one process
 * against each rank reading only its own shards straight from the files into a FULL_SHARD trainer,
 * with the memory a rank holds before any model as the baseline. Run under {@code bin/fsdp launch};
 * the figures are in {@code docs/finetune.md}.
 */
package ai.djl.fsdp.bench.load;
