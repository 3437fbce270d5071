package ai.djl.fsdp.checkpoint;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.safetensors.SafetensorsFile;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
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

    @BeforeEach
    void open() {
        manager = Engine.getEngine("PyTorch").newBaseManager();
    }

    @AfterEach
    void close() {
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

    /** Returns the message a refused write gives; no file is left behind. */
    private String refusal(StateTransform.UnitTensors tensors) {
        Path file = dir.resolve("refused.safetensors");
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> write(file, tensors));
        assertFalse(Files.exists(file), "a refused write leaves no file");
        return e.getMessage();
    }

    /** Writes the one-tensor state {@link #HALVES} from a unit with no parameters. */
    private static void write(Path file, StateTransform.UnitTensors tensors) throws IOException {
        ModelStateWriter.write(
                visitor -> visitor.visit(new GatheredUnit("root", List.of())),
                true,
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
