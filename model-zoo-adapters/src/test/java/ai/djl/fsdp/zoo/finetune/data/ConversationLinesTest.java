package ai.djl.fsdp.zoo.finetune.data;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A JSON line's {@code messages} and {@code tools} of the wrong shape (not a list, or an element
 * that is not an object) stop the read in one line naming the file, the line and the shape
 * expected, as the other checks of a line do.
 */
class ConversationLinesTest {

    private static final String GOOD =
            "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"tools\": [{\"name\":"
                    + " \"add\"}]}";

    @TempDir Path dir;

    @Test
    void aWellFormedConversationIsRead() throws IOException {
        List<Document> read = read(GOOD);
        assertEquals(1, read.size());
        assertEquals("hi", read.get(0).messages().get(0).get("content"));
        assertEquals("add", read.get(0).tools().get(0).get("name"));
    }

    @Test
    void malformedMessagesAndToolsNameTheFileTheLineAndTheShape() throws IOException {
        String messages = "'messages' is a list of messages, each an object";
        assertRefused(": " + messages + ", got \"hi\"", "{\"messages\": \"hi\"}");
        assertRefused(": " + messages + ", got null", "{\"messages\": null}");
        assertRefused(
                ": " + messages + ", but it holds [\"user\",\"hi\"]",
                "{\"messages\": [[\"user\", \"hi\"]]}");
        assertRefused(
                ": 'tools' is a list of JSON schemas, but it holds 1",
                "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"tools\": [1]}");
        assertRefused(
                ": 'tools' is a list of JSON schemas, got {\"name\":\"add\"}",
                "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"tools\":"
                        + " {\"name\": \"add\"}}");
    }

    /** Reads a file whose second line is {@code bad} and checks the message after its place. */
    private void assertRefused(String expected, String bad) throws IOException {
        Path file = Files.writeString(dir.resolve("chats.jsonl"), GOOD + "\n" + bad + "\n");
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> TextDatasets.read(file, TextDatasets.Fields.text("text")));
        assertEquals(file + " line 2" + expected, e.getMessage());
    }

    private List<Document> read(String line) throws IOException {
        Path file = Files.writeString(dir.resolve("good.jsonl"), line + "\n");
        return TextDatasets.read(file, TextDatasets.Fields.text("text"));
    }
}
