package ai.djl.fsdp.zoo.t5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import ai.djl.fsdp.zoo.finetune.FinetuneCommand;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * A data flag of the other task, given on the command line, stops {@code finetune} in one line that
 * names it and what to use instead, before anything is read or written: each causal language
 * model's flag with a T5, whatever its value (its alias named by the flag's name), and each seq2seq
 * flag with a decoder-only model.
 */
class TaskFlagsTest {

    private static final String T5 =
            " does not apply to model_type t5, a seq2seq model trained on source-target pairs:"
                    + " leave it out; ";
    private static final String GPT2 =
            " does not apply to model_type gpt2, a decoder-only model trained on texts or"
                    + " conversations: leave it out; ";
    private static final String PADDED =
            "pairs are padded per batch, to at most --max_source_length and --max_target_length";
    private static final String CONVERSATIONS =
            "pairs are not conversations: name their fields with --source_field and"
                    + " --target_field";

    @Test
    void causalFlagsAreRefusedWithT5(@TempDir Path directory) throws Exception {
        Path model = Seq2SeqFinetuneTest.tinyT5(directory);
        Path data = Seq2SeqFinetuneTest.splits(directory);
        Path output = directory.resolve("never");
        List<String> base =
                List.of(
                        "--model_name_or_path", model.toString(),
                        "--dataset_name", data.toString(),
                        "--output_dir", output.toString());
        Map<List<String>, String> refused =
                Map.of(
                        List.of("--max_seq_len", "64"),
                        "--max_seq_len" + T5 + "set --max_source_length and --max_target_length",
                        List.of("--max_seq_length", "128"),
                        "--max_seq_len" + T5 + "set --max_source_length and --max_target_length",
                        List.of("--packing", "False"),
                        "--packing" + T5 + PADDED,
                        List.of("--padding_free"),
                        "--padding_free" + T5 + PADDED,
                        List.of("--completion_only_loss", "True"),
                        "--completion_only_loss"
                                + T5
                                + "the loss is on the target alone (--target_field)",
                        List.of("--append_concat_token"),
                        "--append_concat_token"
                                + T5
                                + "each source and target ends with the end-of-sequence token"
                                + " already",
                        List.of("--dataset_text_field", "text"),
                        "--dataset_text_field"
                                + T5
                                + "name the pairs' fields with --source_field and --target_field",
                        List.of("--chat_template_format", "chatml"),
                        "--chat_template_format" + T5 + CONVERSATIONS,
                        List.of("--chat_template_kwargs", "{}"),
                        "--chat_template_kwargs" + T5 + CONVERSATIONS);
        refused.forEach((flag, expected) -> assertRefused(expected, base, flag));
        assertFalse(Files.exists(output), "nothing is written");
    }

    @Test
    void seq2seqFlagsAreRefusedWithADecoderOnlyModel(@TempDir Path directory) {
        Path output = directory.resolve("never");
        List<String> base =
                List.of("--model_name_or_path", "gpt2-tiny", "--output_dir", output.toString());
        Map<List<String>, String> refused =
                Map.of(
                        List.of("--source_field", "source"),
                        "--source_field" + GPT2 + "name a text's field with --dataset_text_field",
                        List.of("--summary_column", "summary"),
                        "--target_field" + GPT2 + "name a text's field with --dataset_text_field",
                        List.of("--max_source_length", "64"),
                        "--max_source_length" + GPT2 + "set --max_seq_len",
                        List.of("--max_target_length", "8"),
                        "--max_target_length" + GPT2 + "set --max_seq_len");
        refused.forEach((flag, expected) -> assertRefused(expected, base, flag));
        assertFalse(Files.exists(output), "nothing is written");
    }

    private static void assertRefused(String expected, List<String> base, List<String> flag) {
        List<String> args = new ArrayList<>(base);
        args.addAll(flag);
        FinetuneCommand command = new FinetuneCommand();
        CommandLine line = new CommandLine(command);
        line.setOut(new PrintWriter(new StringWriter()));
        line.parseArgs(args.toArray(new String[0]));
        IllegalArgumentException error =
                assertThrows(IllegalArgumentException.class, command::call, flag.toString());
        assertEquals(expected, error.getMessage(), flag.toString());
    }
}
