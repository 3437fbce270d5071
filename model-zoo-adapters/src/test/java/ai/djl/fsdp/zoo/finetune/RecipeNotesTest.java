package ai.djl.fsdp.zoo.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.zoo.finetune.args.FsdpArguments;
import ai.djl.fsdp.zoo.finetune.args.HubCompatibility;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/**
 * The recipe flags docs/finetune.md promises a note for each print one line saying what happens
 * instead, whatever their value; left out, they print nothing.
 */
class RecipeNotesTest {

    @Test
    void eachAcceptedFlagPrintsOneLine() {
        List<String> notes =
                notes(
                        "--push_to_hub",
                        "--hub_private_repo",
                        "True",
                        "--hub_strategy",
                        "every_save",
                        "--gradient_checkpointing",
                        "True",
                        "--use_reentrant",
                        "False",
                        "--fsdp_use_orig_params",
                        "false",
                        "--fsdp_cpu_ram_efficient_loading",
                        "true");
        assertEquals(4, notes.size(), notes.toString());
        assertTrue(
                notes.contains(
                        "--push_to_hub, --hub_private_repo, --hub_strategy: there is no hub here;"
                                + " the model stays in --output_dir"),
                notes.toString());
        for (String start :
                List.of(
                        "--use_reentrant false: ",
                        "fsdp_use_orig_params false: ",
                        "fsdp_cpu_ram_efficient_loading true: ")) {
            assertTrue(notes.stream().anyMatch(n -> n.startsWith(start)), start + " in " + notes);
        }
        assertEquals(
                List.of("--hub_model_id: there is no hub here; the model stays in --output_dir"),
                notes("--hub_model_id", "me/model"),
                "a --hub_* flag alone is noted too");
        assertEquals(List.of(), notes("--gradient_checkpointing", "False"));
        assertEquals(List.of(), notes());
    }

    private static List<String> notes(String... args) {
        HubCompatibility hub = new HubCompatibility();
        FsdpArguments fsdp = new FsdpArguments();
        CommandLine line = new CommandLine(CommandSpec.create());
        line.addMixin("hub", hub);
        line.addMixin("fsdp", fsdp);
        line.parseArgs(args);
        List<String> notes = new ArrayList<>();
        hub.check(notes::add);
        fsdp.check(notes::add);
        return notes;
    }
}
