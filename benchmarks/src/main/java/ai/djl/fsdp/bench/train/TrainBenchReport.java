package ai.djl.fsdp.bench.train;

import ai.djl.fsdp.launch.rank.RankThreads;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.trainer.MixedPrecision;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

/** Reads the ranks' measurement files and writes the benchmark's one-line summary. */
final class TrainBenchReport {

    private TrainBenchReport() {}

    /**
     * Returns the summary line: the slowest rank's step time (the job moves at its pace), the
     * largest rank's memory, traffic and wait for collectives in the last step, the ranks' mean
     * loss in the last step, and the largest rank's CPU time per step (which the other processes of
     * a shared machine move less than the step time); with {@code --op-profile}, the operators rank
     * 0 called in its profiled step.
     */
    static String summarize(TrainBenchSettings settings, MatMulPeak peak, Path report)
            throws IOException {
        Map<String, Double> worst = new HashMap<>();
        double lossSum = 0;
        for (int rank = 0; rank < settings.nproc(); rank++) {
            String line =
                    Files.readString(Path.of(report + ".rank" + rank), StandardCharsets.UTF_8)
                            .trim();
            for (String field : line.split(" ")) {
                String[] pair = field.split("=");
                double value = Double.parseDouble(pair[1]);
                if (pair[0].equals("loss")) {
                    lossSum += value;
                } else {
                    worst.merge(pair[0], value, Math::max);
                }
            }
        }
        double stepMillis = worst.get("step_ms");
        double tokens =
                (double) settings.nproc() * settings.shape().batch() * settings.shape().sequence();
        double tokensPerSecond = tokens / (stepMillis / 1000);
        double modelGflops = tokensPerSecond * settings.modelFlopsPerToken() / 1e9;
        int units =
                units(
                        peak.device().isGpu(),
                        settings.nproc(),
                        Runtime.getRuntime().availableProcessors(),
                        System.getenv());
        // The matrix products run in the parameters' compute type.
        Precision compute = MixedPrecision.of(settings.precision()).param();
        double peakGflops = peak.perUnit(compute) * units;
        return String.format(
                Locale.ROOT,
                "sharding=%s nproc=%d attention=%s precision=%s lora_rank=%d"
                    + " reshard_after_forward=%s activation_checkpointing=%s tokens_per_s=%.1f"
                    + " step_ms=%.1f loss=%.4f peak_rss_mb_per_rank=%.1f"
                    + " model_state_mb_per_rank=%.1f sent_mb_per_step=%.1f"
                    + " comm_wait_ms_per_step=%.1f model_gflops_per_s=%.1f peak_gflops=%.1f"
                    + " peak_fraction=%.3f fp32_gflops_per_thread=%.1f bf16_gflops_per_thread=%.1f"
                    + " sent_across_mb_per_step=%.1f shard_group_size=%d ideal_mb_per_rank=%.1f"
                    + " peak_rss_over_ideal=%.3f idle_rss_mb_per_rank=%.1f"
                    + " init_peak_rss_mb_per_rank=%.1f step_peak_rss_mb_per_rank=%.1f"
                    + " peak_above_idle_over_ideal=%.3f cpu_ms_per_step=%.1f model=%s"
                    + " communication_quantization=%s sent_all_gather_mb_per_step=%.3f"
                    + " sent_reduce_scatter_mb_per_step=%.3f sent_all_reduce_mb_per_step=%.3f"
                    + " sent_other_mb_per_step=%.3f%s",
                settings.sharding(),
                settings.nproc(),
                settings.attention(),
                compute.getName(),
                settings.loraRank(),
                settings.reshardsAfterForward(),
                settings.checkpointing(),
                tokensPerSecond,
                stepMillis,
                lossSum / settings.nproc(),
                worst.get("peak_rss_mb"),
                worst.get("model_state_mb"),
                worst.get("sent_mb"),
                worst.get("comm_wait_ms"),
                modelGflops,
                peakGflops,
                modelGflops / peakGflops,
                peak.float32(),
                peak.bfloat16(),
                worst.get("sent_across_mb"),
                settings.isHybrid() && settings.shardGroupSize() > 0
                        ? settings.shardGroupSize()
                        : settings.nproc(),
                worst.get("ideal_mb"),
                worst.get("rss_over_ideal"),
                worst.get("idle_rss_mb"),
                worst.get("init_peak_rss_mb"),
                worst.get("step_peak_rss_mb"),
                worst.get("above_idle_over_ideal"),
                worst.get("cpu_ms"),
                settings.model(),
                settings.quantization(),
                worst.get("sent_all_gather_mb"),
                worst.get("sent_reduce_scatter_mb"),
                worst.get("sent_all_reduce_mb"),
                worst.get("sent_other_mb"),
                // Rank 0's count, when it profiled a step (the others write -1).
                worst.get("ops") >= 0
                        ? String.format(Locale.ROOT, " ops_per_step=%.0f", worst.get("ops"))
                        : "");
    }

    /**
     * Returns what the peak rate is multiplied by: on GPUs the ranks (a GPU each), on the CPU the
     * intra-op threads of all ranks, each rank's as the launcher gives it ({@link RankThreads}:
     * {@code OMP_NUM_THREADS} when set, else the cores divided among the ranks).
     *
     * @param gpu whether the ranks run on GPUs
     * @param nproc the ranks
     * @param cores the cores of this machine
     * @param environment the environment the launcher starts the ranks from
     * @return the ranks, or the threads of all ranks
     */
    static int units(boolean gpu, int nproc, int cores, Map<String, String> environment) {
        return gpu ? nproc : nproc * RankThreads.forNode(null, nproc, cores, environment).perRank();
    }
}
