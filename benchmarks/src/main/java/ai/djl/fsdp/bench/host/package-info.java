/**
 * JMH benchmarks of the host's paths per operator (issue #33): what one step pays on the host for
 * one DJL operator, one dispatcher call through JNA, one unit's parameter views and flat gradient,
 * one AdamW update of a flat shard, and one GPT-2 block's forward and backward at the host-bound
 * width (64); quantizing and dequantizing a 1M-element shard for quantized communication (issue
 * #48); and decoding a Llama-1B-shaped QLoRA unit's 4-bit base (issue #47). Each runs on one
 * intra-op thread in seconds, so the suite catches a regression in any of them:
 *
 * <pre>
 * java -cp 'benchmarks/target/benchmarks.jar:benchmarks/target/lib/*' org.openjdk.jmh.Main 'bench.host'
 * </pre>
 */
package ai.djl.fsdp.bench.host;
