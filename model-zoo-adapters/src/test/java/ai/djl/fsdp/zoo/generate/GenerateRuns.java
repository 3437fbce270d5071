package ai.djl.fsdp.zoo.generate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine;

/** Greedy {@code generate} runs for tests: in this process, or their arguments for ranks. */
public final class GenerateRuns {

    private GenerateRuns() {}

    /**
     * Runs {@code generate} greedily in this process with the token ids printed, expecting success.
     *
     * @param model the model directory
     * @param prompt the prompt
     * @param tokens the most new tokens
     * @param flags more flags
     * @return its standard output (the text) and its standard error (notes, token ids)
     */
    public static String[] run(Path model, String prompt, int tokens, String... flags) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exit =
                new CommandLine(new GenerateCommand())
                        .setOut(new PrintWriter(out))
                        .setErr(new PrintWriter(err))
                        .execute(arguments(model, prompt, tokens, flags));
        assertEquals(0, exit, err.toString());
        return new String[] {out.toString(), err.toString()};
    }

    /**
     * Returns the arguments of a greedy run with the token ids printed.
     *
     * @param model the model directory
     * @param prompt the prompt
     * @param tokens the most new tokens
     * @param flags more flags
     * @return the arguments
     */
    public static String[] arguments(Path model, String prompt, int tokens, String... flags) {
        List<String> args =
                new ArrayList<>(
                        List.of(
                                "--model",
                                model.toString(),
                                "--prompt",
                                prompt,
                                "--max_new_tokens",
                                String.valueOf(tokens),
                                "--print_token_ids"));
        args.addAll(List.of(flags));
        return args.toArray(new String[0]);
    }

    /**
     * Returns the {@code token ids: [...]} line of a run's notes.
     *
     * @param notes its standard error
     * @return the line
     */
    public static String tokenIds(String notes) {
        String ids = notes.replaceAll("(?s).*(token ids: \\[[^]]*]).*", "$1");
        assertTrue(ids.startsWith("token ids: ["), notes);
        return ids;
    }
}
