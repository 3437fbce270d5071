package ai.djl.fsdp.safetensors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SafetensorsTest {

    @TempDir Path dir;
    private NDManager manager;

    @BeforeEach
    void open() {
        manager = Engine.getEngine("PyTorch").newBaseManager();
    }

    @AfterEach
    void close() {
        manager.close();
    }

    @Test
    void roundTripIsBitIdentical() throws IOException {
        Random random = new Random(1);
        float[] floats = new float[24];
        for (int i = 0; i < floats.length; i++) {
            floats[i] = (float) random.nextGaussian();
        }
        floats[3] = Float.NaN;
        floats[4] = -0.0f;
        floats[5] = Float.MIN_VALUE;
        NDArray f32 = manager.create(floats, new Shape(2, 3, 4));
        NDArray f16 = f32.toType(DataType.FLOAT16, false);
        NDArray i64 = manager.create(new long[] {Long.MIN_VALUE, -1, 0, 7, Long.MAX_VALUE});
        Path file = dir.resolve("t.safetensors");
        new SafetensorsWriter()
                .add("a.f32", f32)
                .add("b.f16", f16)
                .add("c.i64", i64)
                .putMetadata("format", "pt")
                .write(file);
        try (SafetensorsFile st = SafetensorsFile.open(file)) {
            assertEquals(List.of("a.f32", "b.f16", "c.i64"), List.copyOf(st.getNames()));
            assertEquals(Map.of("format", "pt"), st.getMetadata());
            assertEquals(
                    new TensorInfo("a.f32", Dtype.F32, new Shape(2, 3, 4), 0, 96),
                    st.info("a.f32"));
            assertBitIdentical(f32, st.read(manager, "a.f32"));
            assertBitIdentical(f16, st.read(manager, "b.f16"));
            assertBitIdentical(i64, st.read(manager, "c.i64"));
        }
        // Rewriting what was read gives the same bytes again.
        Path again = dir.resolve("again.safetensors");
        try (SafetensorsFile st = SafetensorsFile.open(file)) {
            SafetensorsWriter writer = new SafetensorsWriter().putMetadata("format", "pt");
            for (String name : st.getNames()) {
                writer.add(name, st.read(manager, name));
            }
            writer.write(again);
        }
        assertArrayEquals(Files.readAllBytes(file), Files.readAllBytes(again));
        // The data section starts 8-byte aligned.
        long headerLength =
                ByteBuffer.wrap(Files.readAllBytes(file), 0, 8)
                        .order(ByteOrder.LITTLE_ENDIAN)
                        .getLong();
        assertEquals(0, headerLength % 8);
    }

    @Test
    void readsRangesWithoutTheRest() throws IOException {
        NDArray x = manager.arange(0f, 60f).reshape(3, 4, 5);
        Path file = dir.resolve("r.safetensors");
        new SafetensorsWriter().add("x", x).write(file);
        try (SafetensorsFile st = SafetensorsFile.open(file)) {
            assertArrayEquals(
                    new float[] {17, 18, 19, 20, 21}, st.read(manager, "x", 17, 22).toFloatArray());
            assertEquals(0, st.read(manager, "x", 60, 60).size());
            assertThrows(IndexOutOfBoundsException.class, () -> st.read(manager, "x", 50, 61));
            ByteBuffer raw = st.map("x", 59, 60);
            assertEquals(59f, raw.getFloat(0));
        }
    }

    @Test
    void widensBf16ExactlyToFloat32() throws IOException {
        float[] values = {1f, -2.5f, 3.140625f, 0f, -0f, Float.POSITIVE_INFINITY};
        ByteBuffer bf16 = ByteBuffer.allocate(values.length * 2).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) {
            bf16.putShort((short) (Float.floatToRawIntBits(v) >>> 16));
        }
        bf16.flip();
        Path file = dir.resolve("bf16.safetensors");
        new SafetensorsWriter().add("w", Dtype.BF16, new Shape(2, 3), bf16).write(file);
        try (SafetensorsFile st = SafetensorsFile.open(file)) {
            NDArray read = st.read(manager, "w");
            assertEquals(DataType.FLOAT32, read.getDataType());
            assertEquals(new Shape(2, 3), read.getShape());
            assertArrayEquals(values, read.toFloatArray());
            assertArrayEquals(
                    new float[] {3.140625f, 0f}, st.read(manager, "w", 2, 4).toFloatArray());
        }
    }

    @Test
    void shardedCheckpointsReadLikeOneFile() throws IOException {
        SafetensorsWriter writer = new SafetensorsWriter();
        for (int i = 0; i < 5; i++) {
            writer.add("t" + i, manager.full(new Shape(10), (float) i));
        }
        writer.writeCheckpoint(dir, 100); // 40 bytes each: two per shard
        assertTrue(Files.exists(dir.resolve("model-00003-of-00003.safetensors")));
        try (SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint.open(dir)) {
            assertEquals(List.of("t0", "t1", "t2", "t3", "t4"), List.copyOf(checkpoint.names()));
            assertEquals(4f, checkpoint.read(manager, "t4").getFloat(3));
            assertEquals(2f, checkpoint.read(manager, "t2", 9, 10).getFloat(0));
        }
        Path single = dir.resolve("single");
        writer.writeCheckpoint(single, Long.MAX_VALUE);
        assertTrue(Files.exists(single.resolve(SafetensorsCheckpoint.SINGLE_FILE)));
        assertTrue(Files.notExists(single.resolve(SafetensorsCheckpoint.INDEX_FILE)));
    }

    @Test
    void resavingInTheOtherLayoutRemovesTheOldOne() throws IOException {
        Path checkpoint = dir.resolve("resaved");
        Files.createDirectories(checkpoint);
        Path notes = Files.writeString(checkpoint.resolve("notes.txt"), "mine");
        Path lookalike = Files.writeString(checkpoint.resolve("model-1-of-2.safetensors"), "mine");
        SafetensorsWriter old = new SafetensorsWriter();
        SafetensorsWriter resaved = new SafetensorsWriter();
        for (int i = 0; i < 5; i++) {
            old.add("t" + i, manager.full(new Shape(10), (float) i));
            resaved.add("t" + i, manager.full(new Shape(10), (float) i + 10));
        }
        old.writeCheckpoint(checkpoint, 100); // three shards and an index
        resaved.writeCheckpoint(checkpoint, Long.MAX_VALUE);
        assertEquals(
                List.of("model-1-of-2.safetensors", SafetensorsCheckpoint.SINGLE_FILE, "notes.txt"),
                listing(checkpoint));
        assertEquals(14f, readFirst(checkpoint, "t4"), "the new weights, not the old shards'");

        old.writeCheckpoint(checkpoint, 100);
        assertEquals(
                List.of(
                        "model-00001-of-00003.safetensors",
                        "model-00002-of-00003.safetensors",
                        "model-00003-of-00003.safetensors",
                        "model-1-of-2.safetensors",
                        SafetensorsCheckpoint.INDEX_FILE,
                        "notes.txt"),
                listing(checkpoint));
        assertEquals(4f, readFirst(checkpoint, "t4"));

        resaved.writeCheckpoint(checkpoint, 120); // two shards: the three of the last save go
        assertEquals(
                List.of(
                        "model-00001-of-00002.safetensors",
                        "model-00002-of-00002.safetensors",
                        "model-1-of-2.safetensors",
                        SafetensorsCheckpoint.INDEX_FILE,
                        "notes.txt"),
                listing(checkpoint));
        assertEquals(14f, readFirst(checkpoint, "t4"));
        assertEquals("mine", Files.readString(notes));
        assertEquals("mine", Files.readString(lookalike));
    }

    /** The names in a directory, sorted. */
    static List<String> listing(Path directory) throws IOException {
        try (java.util.stream.Stream<Path> files = Files.list(directory)) {
            return files.map(file -> file.getFileName().toString()).sorted().toList();
        }
    }

    private float readFirst(Path checkpoint, String name) throws IOException {
        try (SafetensorsCheckpoint read = SafetensorsCheckpoint.open(checkpoint)) {
            return read.read(manager, name).getFloat(0);
        }
    }

    @Test
    void corruptFilesAreErrorsNamingTheProblem() throws IOException {
        Path file = dir.resolve("ok.safetensors");
        new SafetensorsWriter().add("x", manager.ones(new Shape(4))).write(file);
        byte[] good = Files.readAllBytes(file);

        Path hugeHeader =
                write(
                        "huge.safetensors",
                        good,
                        b -> b.order(ByteOrder.LITTLE_ENDIAN).putLong(0, 1L << 40));
        assertMessage(hugeHeader, "header length");

        Path truncated = dir.resolve("truncated.safetensors");
        Files.write(truncated, java.util.Arrays.copyOf(good, good.length - 4));
        assertMessage(truncated, "end beyond the data section");

        Path shortFile = dir.resolve("short.safetensors");
        Files.write(shortFile, new byte[] {1, 2, 3});
        assertMessage(shortFile, "shorter than the 8-byte header length");

        Path notJson = header("json.safetensors", "{\"x\": [}");
        assertMessage(notJson, "not valid JSON");

        Path badDtype =
                header(
                        "dtype.safetensors",
                        "{\"x\":{\"dtype\":\"F8\",\"shape\":[1],\"data_offsets\":[0,1]}}");
        assertMessage(badDtype, "dtype \"F8\" is not one of");

        Path wrongSize =
                header(
                        "size.safetensors",
                        "{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}");
        assertMessage(wrongSize, "needs 12");

        try (SafetensorsFile st = SafetensorsFile.open(file)) {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> st.info("y"));
            assertTrue(e.getMessage().contains("no tensor named \"y\""));
        }
    }

    @Test
    void failedWriteLeavesThePreviousFile() throws IOException {
        Path file = dir.resolve("keep.safetensors");
        new SafetensorsWriter().add("x", manager.ones(new Shape(2))).write(file);
        byte[] before = Files.readAllBytes(file);
        assertThrows(
                IOException.class,
                () ->
                        AtomicFiles.write(
                                file,
                                channel -> {
                                    channel.write(ByteBuffer.wrap(new byte[] {1, 2}));
                                    throw new IOException("disk full");
                                }));
        assertArrayEquals(before, Files.readAllBytes(file));
        try (var files = Files.list(dir)) {
            assertEquals(1, files.count(), "no temporary file is left behind");
        }
    }

    @Test
    void streamedFileEqualsTheOneWrittenAtOnce() throws IOException {
        NDArray a = manager.arange(0f, 6f).reshape(2, 3);
        NDArray b = manager.create(new long[] {4, 5, 6});
        NDArray c = manager.ones(new Shape(3)).toType(DataType.FLOAT16, false);
        Path whole = dir.resolve("whole.safetensors");
        new SafetensorsWriter()
                .putMetadata("format", "pt")
                .add("a", a)
                .add("b", b)
                .add("c", c)
                .write(whole);
        Path streamed = dir.resolve("streamed.safetensors");
        SafetensorsWriter writer =
                new SafetensorsWriter()
                        .putMetadata("format", "pt")
                        .declare("a", Dtype.F32, new Shape(2, 3))
                        .declare("b", Dtype.I64, new Shape(3))
                        .add("c", c);
        try (SafetensorsWriter.StreamingFile out = writer.stream(streamed)) {
            // Bytes arrive out of order; the file exists only once all have.
            out.write("b", b);
            assertTrue(Files.notExists(streamed));
            IllegalStateException early = assertThrows(IllegalStateException.class, out::commit);
            assertTrue(early.getMessage().contains("[a]"), early.getMessage());
            out.write("a", a);
            out.commit();
        }
        assertArrayEquals(Files.readAllBytes(whole), Files.readAllBytes(streamed));
    }

    @Test
    void streamingRefusesWhatWasNotDeclaredAsWritten() throws IOException {
        Path file = dir.resolve("refused.safetensors");
        SafetensorsWriter writer = new SafetensorsWriter().declare("a", Dtype.F32, new Shape(2));
        IllegalStateException unwritable =
                assertThrows(IllegalStateException.class, () -> writer.write(file));
        assertTrue(unwritable.getMessage().contains("only declared"), unwritable.getMessage());
        try (SafetensorsWriter.StreamingFile out = writer.stream(file)) {
            assertThrows(
                    IllegalArgumentException.class,
                    () -> out.write("b", manager.ones(new Shape(2))));
            IllegalArgumentException shape =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> out.write("a", manager.ones(new Shape(3))));
            assertTrue(shape.getMessage().contains("declared (2) F32"), shape.getMessage());
            out.write("a", manager.ones(new Shape(2)));
            assertThrows(
                    IllegalArgumentException.class,
                    () -> out.write("a", manager.ones(new Shape(2))));
        } // closed without a commit: nothing is left behind
        try (var files = Files.list(dir)) {
            assertEquals(0, files.count());
        }
    }

    @Test
    void streamingTakesBytesThatAnotherTypeLabels() throws IOException {
        Path file = dir.resolve("labelled.safetensors");
        SafetensorsWriter writer =
                new SafetensorsWriter().declare("halves", Dtype.F16, new Shape(2, 1));
        try (SafetensorsWriter.StreamingFile out = writer.stream(file)) {
            IllegalArgumentException floats =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> out.writeBytes("halves", manager.ones(new Shape(4))));
            assertTrue(floats.getMessage().contains("as uint8"), floats.getMessage());
            IllegalArgumentException size =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> out.writeBytes("halves", bytes(new byte[3])));
            assertTrue(size.getMessage().contains("needs 4 bytes, got 3"), size.getMessage());
            IllegalArgumentException undeclared =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> out.writeBytes("quarters", bytes(new byte[4])));
            assertEquals("tensor \"quarters\" was not declared", undeclared.getMessage());
        } // closed without a commit: nothing is left behind
        try (SafetensorsWriter.StreamingFile out = writer.stream(file)) {
            // float16 1.0 and 2.0, little-endian, as four bytes.
            out.writeBytes("halves", bytes(new byte[] {0x00, 0x3C, 0x00, 0x40}));
            out.commit();
        }
        try (SafetensorsFile read = SafetensorsFile.open(file)) {
            NDArray halves = read.read(manager, "halves");
            assertEquals(DataType.FLOAT16, halves.getDataType());
            assertEquals(new Shape(2, 1), halves.getShape());
            assertArrayEquals(
                    new float[] {1f, 2f}, halves.toType(DataType.FLOAT32, false).toFloatArray());
        }
    }

    private NDArray bytes(byte[] values) {
        return manager.create(ByteBuffer.wrap(values), new Shape(values.length), DataType.UINT8);
    }

    private Path header(String name, String json) throws IOException {
        byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + bytes.length + 8).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(bytes.length).put(bytes);
        Path path = dir.resolve(name);
        Files.write(path, b.array());
        return path;
    }

    private Path write(String name, byte[] content, java.util.function.Consumer<ByteBuffer> edit)
            throws IOException {
        ByteBuffer copy = ByteBuffer.wrap(content.clone());
        edit.accept(copy);
        Path path = dir.resolve(name);
        try (FileChannel channel =
                FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            channel.write(copy.rewind());
        }
        return path;
    }

    private static void assertMessage(Path file, String expected) {
        SafetensorsException e =
                assertThrows(SafetensorsException.class, () -> SafetensorsFile.open(file).close());
        assertTrue(e.getMessage().contains(expected), e.getMessage());
        assertTrue(e.getMessage().contains(file.getFileName().toString()), e.getMessage());
    }

    private static void assertBitIdentical(NDArray expected, NDArray actual) {
        assertEquals(expected.getDataType(), actual.getDataType());
        assertEquals(expected.getShape(), actual.getShape());
        assertArrayEquals(expected.toByteArray(), actual.toByteArray());
    }
}
