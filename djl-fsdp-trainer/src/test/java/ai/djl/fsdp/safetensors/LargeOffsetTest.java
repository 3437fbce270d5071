package ai.djl.fsdp.safetensors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Offsets past 4 GiB, without writing 4 GiB: a streamed file declares a 5 GiB tensor first and a
 * small one after it, and only the small one is written, at its place past 5 GiB. The file is then
 * sparse (the file system stores the written pages only), yet its header, its length and the small
 * tensor's bytes are what a complete file would hold; reading the small tensor back through the
 * reader checks the reader's offsets too. The 5 GiB tensor itself is never written (the suite
 * cannot afford it), so the file is not committed.
 */
class LargeOffsetTest {

    private static final long BIG = 5L << 30;

    @TempDir Path directory;

    @Test
    void aTensorPastFiveGibibytesLandsAtItsOffset() throws IOException {
        Path file = directory.resolve("large.safetensors");
        SafetensorsWriter writer =
                new SafetensorsWriter()
                        .declare("big", Dtype.U8, new Shape(BIG))
                        .declare("small", Dtype.F32, new Shape(4));
        try (NDManager manager = Engine.getEngine("PyTorch").newBaseManager();
                SafetensorsWriter.StreamingFile out = writer.stream(file)) {
            NDArray small = manager.create(new float[] {1.5f, -2f, 3.25f, 1e30f});
            out.write("small", small);
            Path pending = pendingFile();
            try (SafetensorsFile read = SafetensorsFile.open(pending)) {
                TensorInfo big = read.info("big");
                TensorInfo info = read.info("small");
                assertEquals(0, big.begin());
                assertEquals(BIG, big.end());
                assertEquals(BIG, info.begin());
                assertEquals(BIG + 16, info.end());
                ByteBuffer bytes = read.map("small", 0, 4).order(ByteOrder.LITTLE_ENDIAN);
                float[] values = new float[4];
                bytes.asFloatBuffer().get(values);
                assertArrayEquals(new float[] {1.5f, -2f, 3.25f, 1e30f}, values);
                long headerEnd = Files.size(pending) - BIG - 16;
                assertEquals(0, headerEnd % 8, "the data section starts 8-byte aligned");
            }
        }
        assertFalse(Files.exists(file), "an incomplete file is never published");
    }

    private Path pendingFile() throws IOException {
        try (Stream<Path> files = Files.list(directory)) {
            List<Path> pending = files.filter(p -> p.toString().endsWith(".tmp")).toList();
            assertEquals(1, pending.size(), "one file being written: " + pending);
            return pending.get(0);
        }
    }
}
