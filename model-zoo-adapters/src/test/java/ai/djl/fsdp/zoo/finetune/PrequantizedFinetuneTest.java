package ai.djl.fsdp.zoo.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.quant.QuantType;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.hf.QuantizationConfig;
import ai.djl.fsdp.zoo.hf.Tokenizers;
import ai.djl.fsdp.zoo.lora.PrequantizedCheckpoints;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code finetune} trains LoRA on a pre-quantized checkpoint directly: its steps are those of the
 * same run on the float checkpoint quantized as it loads, to the last printed digit (the two bases
 * hold the same bytes), its own {@code quantization_config} taking the place of flags that differ,
 * and its adapters are written.
 */
class PrequantizedFinetuneTest {

    @Test
    void trainsAsOnTheFloatCheckpointQuantizedAtLoad(@TempDir Path directory) throws Exception {
        Path checkpoint = TestModels.byteLevelLlama(directory.resolve("float"), 13);
        QuantizationConfig nf4 =
                QuantizationConfig.builder().setQuantType(QuantType.NF4).optNested(true).build();
        Path packed =
                PrequantizedCheckpoints.write(checkpoint, nf4, directory.resolve("nf4-nested"));
        Files.copy(checkpoint.resolve(Tokenizers.FILE), packed.resolve(Tokenizers.FILE));

        String atLoad =
                finetune(
                        checkpoint,
                        directory.resolve("at-load"),
                        "--use_4bit_quantization",
                        "True",
                        "--use_nested_quant",
                        "True",
                        "--bnb_4bit_compute_dtype",
                        "float32");
        Path output = directory.resolve("stored");
        // Flags that say otherwise give way to the checkpoint's own quantization_config.
        String stored =
                finetune(
                        packed,
                        output,
                        "--use_4bit_quantization",
                        "True",
                        "--bnb_4bit_quant_type",
                        "fp4");
        assertTrue(
                stored.contains(
                        "note: --use_4bit_quantization's settings (fp4, compute float16, stored as"
                                + " uint8) give way to the checkpoint's quantization_config (nf4,"
                                + " double quantization, compute float32, stored as uint8)"),
                stored);
        List<Double> losses = FinetuneCommandTest.losses(stored, 4);
        assertEquals(FinetuneCommandTest.losses(atLoad, 4), losses, stored);
        assertTrue(losses.get(3) < losses.get(0), "the loss fell: " + losses);
        System.out.println("pre-quantized and quantized at load, losses " + losses);
        assertTrue(Files.exists(output.resolve(Lora.CONFIG_FILE)), stored);
        // A pre-quantized base merges into a plain float checkpoint, its 4 bits decoded.
        assertTrue(stored.contains("merged/: 14 4-bit weights decoded"), stored);
        String merged = Files.readString(output.resolve("merged").resolve("config.json"));
        assertFalse(merged.contains("quantization_config"), merged);
    }

    /** Four LoRA steps on {@code model}; returns the run's output. */
    private static String finetune(Path model, Path output, String... extra) {
        List<String> args =
                new ArrayList<>(
                        List.of(
                                "--model_name_or_path", model.toString(),
                                "--chat_template_format", "chatml",
                                "--use_peft_lora", "True",
                                "--lora_dropout", "0",
                                "--max_seq_len", "64",
                                "--max_steps", "4",
                                "--learning_rate", "1e-2",
                                "--logging_steps", "1",
                                "--save_strategy", "no",
                                "--eval_strategy", "no",
                                "--exact_match_samples", "0",
                                "--output_dir", output.toString()));
        args.addAll(List.of(extra));
        return FinetuneCommandTest.succeeds(args);
    }
}
