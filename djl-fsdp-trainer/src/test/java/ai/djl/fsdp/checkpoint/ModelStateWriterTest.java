package ai.djl.fsdp.checkpoint;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.safetensors.SafetensorsCheckpoint;
import ai.djl.fsdp.safetensors.SafetensorsFile;
import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link ModelStateWriter}'s sink: {@code put} takes a tensor of its declared type (or a floating
 * one, cast) and nothing else, so bytes handed in for a float tensor are refused; {@code putBytes}
 * writes bytes another type labels, uint8 and of the declared size only. A refused write leaves no
 * file behind.
 */
class ModelStateWriterTest {

    private static final StateTransform.Entry HALVES =
            new StateTransform.Entry("halves", Dtype.F32, new Shape(2));

    @TempDir Path dir;
    private NDManager manager;
    private ProcessGroup group;

    @BeforeEach
    void open() {
        manager = Engine.getEngine("PyTorch").newBaseManager();
        group = ProcessGroups.init(DistributedEnv.single(""));
    }

    @AfterEach
    void close() {
        group.close();
        manager.close();
    }

    @Test
    void putRefusesBytesForAFloatTensor() {
        String refused = refusal((unit, sink) -> sink.put("halves", floatBytes()));
        assertTrue(refused.contains("declared (2) F32 but is (8) "), refused);
    }

    @Test
    void putBytesTakesUint8OfTheDeclaredSizeOnly() throws IOException {
        String floats =
                refusal((unit, sink) -> sink.putBytes("halves", manager.ones(new Shape(2))));
        assertTrue(floats.toLowerCase(Locale.ROOT).contains("as uint8, got float32"), floats);
        String size = refusal((unit, sink) -> sink.putBytes("halves", bytes(new byte[7])));
        assertTrue(size.contains("needs 8 bytes, got 7"), size);

        Path file = dir.resolve("bytes.safetensors");
        write(file, (unit, sink) -> sink.putBytes("halves", floatBytes()));
        try (SafetensorsFile read = SafetensorsFile.open(file)) {
            NDArray halves = read.read(manager, "halves");
            assertEquals(DataType.FLOAT32, halves.getDataType());
            assertArrayEquals(new float[] {0.5f, -1.5f}, halves.toFloatArray());
        }
    }

    @Test
    void aSinkThatPassesTensorsOnRefusesBytes() {
        StateTransform.Sink passing = (name, value) -> {};
        UnsupportedOperationException e =
                assertThrows(
                        UnsupportedOperationException.class,
                        () -> passing.putBytes("halves", floatBytes()));
        assertTrue(e.getMessage().contains("\"halves\""), e.getMessage());
    }

    @Test
    void resavingInTheOtherLayoutRemovesTheOldOne() throws IOException {
        Files.writeString(dir.resolve("notes.txt"), "mine");
        List<String> sharded =
                List.of(
                        "model-00001-of-00002.safetensors",
                        "model-00002-of-00002.safetensors",
                        SafetensorsCheckpoint.INDEX_FILE,
                        "notes.txt");
        writeCheckpoint(1f, 16); // two tensors a file: two shards and an index
        assertEquals(sharded, listing());
        writeCheckpoint(2f, Long.MAX_VALUE);
        assertEquals(List.of(SafetensorsCheckpoint.SINGLE_FILE, "notes.txt"), listing());
        assertEquals(2f, readThird(), "the new weights, not the old shards'");
        writeCheckpoint(3f, 16);
        assertEquals(sharded, listing());
        assertEquals(3f, readThird());
    }

    /**
     * Writes three two-element float tensors, each filled with {@code value}, into {@link #dir}.
     */
    private void writeCheckpoint(float value, long maxShardBytes) throws IOException {
        List<StateTransform.Entry> entries = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            entries.add(new StateTransform.Entry("t" + i, Dtype.F32, new Shape(2)));
        }
        ModelStateWriter.writeCheckpoint(
                visitor -> visitor.visit(new GatheredUnit("root", List.of())),
                group,
                dir,
                StateTransform.of(
                        entries,
                        (unit, sink) -> {
                            for (StateTransform.Entry entry : entries) {
                                sink.put(entry.name(), manager.full(new Shape(2), value));
                            }
                        }),
                maxShardBytes);
    }

    private float readThird() throws IOException {
        try (SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint.open(dir)) {
            return checkpoint.read(manager, "t2").getFloat(1);
        }
    }

    private List<String> listing() throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(file -> file.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void everyRankFailsWithTheWritersMessage() throws IOException {
        Path saved = Files.createDirectories(dir.resolve("saved"));
        List<String> messages = saveOnTwoRanks(saved, "transform");
        assertEquals("failed: " + ModelStateWriterRankMain.TRANSFORM_FAILURE, messages.get(0));
        assertEquals(
                "failed: Cannot write "
                        + saved
                        + ": rank 0, which writes it, failed: "
                        + ModelStateWriterRankMain.TRANSFORM_FAILURE,
                messages.get(1));
        try (Stream<Path> left = Files.list(saved)) {
            assertEquals(List.of(), left.toList(), "the file not committed is deleted");
        }

        Path occupied = Files.writeString(dir.resolve("occupied"), "a file, not a directory");
        messages = saveOnTwoRanks(occupied, "open");
        assertTrue(messages.get(0).startsWith("failed: "), messages.get(0));
        String own = messages.get(0).substring("failed: ".length());
        assertTrue(own.contains(occupied.toString()), own);
        assertTrue(
                messages.get(1).endsWith(": rank 0, which writes it, failed: " + own),
                messages.get(1));
    }

    /**
     * Runs {@link ModelStateWriterRankMain} on two ranks; returns each rank's outcome, once each
     * has visited every unit.
     */
    private static List<String> saveOnTwoRanks(Path target, String failing) {
        List<String> outcomes = new ArrayList<>();
        try (RankProcesses job =
                RankProcesses.builder(ModelStateWriterRankMain.class)
                        .worldSize(2)
                        .args(target.toString(), failing)
                        .timeout(Duration.ofMinutes(2))
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            for (int rank = 0; rank < 2; rank++) {
                String output = results.rank(rank).output();
                String visited = "rank " + rank + " visited 3 units; ";
                int at = output.indexOf(visited);
                assertTrue(at >= 0, output);
                int end = output.indexOf('\n', at);
                outcomes.add(
                        output.substring(at + visited.length(), end < 0 ? output.length() : end));
            }
        }
        return outcomes;
    }

    /** Returns the message a refused write gives; no file is left behind. */
    private String refusal(StateTransform.UnitTensors tensors) {
        Path file = dir.resolve("refused.safetensors");
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> write(file, tensors));
        assertFalse(Files.exists(file), "a refused write leaves no file");
        return e.getMessage();
    }

    /** Writes the one-tensor state {@link #HALVES} from a unit with no parameters. */
    private void write(Path file, StateTransform.UnitTensors tensors) throws IOException {
        ModelStateWriter.write(
                visitor -> visitor.visit(new GatheredUnit("root", List.of())),
                group,
                file,
                StateTransform.of(List.of(HALVES), tensors));
    }

    /** float32 0.5 and -1.5 as their eight little-endian bytes. */
    private NDArray floatBytes() {
        ByteBuffer floats = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
        floats.putFloat(0.5f).putFloat(-1.5f);
        return bytes(floats.array());
    }

    private NDArray bytes(byte[] values) {
        return manager.create(ByteBuffer.wrap(values), new Shape(values.length), DataType.UINT8);
    }
}
