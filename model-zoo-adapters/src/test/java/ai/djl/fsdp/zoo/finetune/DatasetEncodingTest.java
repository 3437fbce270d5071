package ai.djl.fsdp.zoo.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import ai.djl.fsdp.zoo.finetune.data.TextDatasets;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A dataset that is not UTF-8 text is named, with the problem and the fix. */
class DatasetEncodingTest {

    @TempDir Path dir;

    @Test
    void latin1AndBinaryDatasetsNameTheFileAndTheEncoding() throws IOException {
        Path latin1 = dir.resolve("latin1.txt");
        Files.write(
                latin1,
                "caf\u00e9 au lait\n".getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
        Path binary = dir.resolve("data.bin");
        byte[] bytes = new byte[4096];
        new java.util.Random(1).nextBytes(bytes);
        Files.write(binary, bytes);
        for (Path file : new Path[] {latin1, binary}) {
            IllegalArgumentException e =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> TextDatasets.read(file, TextDatasets.Fields.text("text")));
            assertEquals(
                    "--dataset_name "
                            + file
                            + " is not UTF-8 text (it holds a byte sequence UTF-8 does not"
                            + " allow; a binary file?): pass a plain-text file, or convert it,"
                            + " e.g. with iconv -f LATIN1 -t UTF-8",
                    e.getMessage());
        }
    }
}
