package ai.djl.fsdp.zoo.sharded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.safetensors.Dtype;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code --max_shard_size} and {@code --save_dtype} read as Hugging Face reads them. */
class SaveFormatTest {

    @TempDir Path directory;

    @Test
    void sizesAreDecimalOrBinaryOrBytes() {
        assertEquals(5_000_000_000L, SaveFormat.bytes("5GB"));
        assertEquals(500_000_000L, SaveFormat.bytes("500MB"));
        assertEquals(2L << 30, SaveFormat.bytes("2GiB"));
        assertEquals(1_500_000_000L, SaveFormat.bytes("1.5gb"));
        assertEquals(12345L, SaveFormat.bytes("12345"));
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> SaveFormat.bytes("big"));
        assertTrue(e.getMessage().contains("--max_shard_size"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> SaveFormat.bytes("0GB"));
    }

    @Test
    void autoIsTheBaseTorchDtype() throws IOException {
        Files.writeString(directory.resolve("config.json"), "{\"torch_dtype\": \"bfloat16\"}");
        assertEquals(Dtype.BF16, SaveFormat.dtype("auto", directory));
        Files.writeString(directory.resolve("config.json"), "{\"torch_dtype\": \"float16\"}");
        assertEquals(Dtype.F16, SaveFormat.dtype("auto", directory));
        Files.writeString(directory.resolve("config.json"), "{\"model_type\": \"llama\"}");
        assertEquals(Dtype.F32, SaveFormat.dtype("auto", directory));
        assertEquals(Dtype.F32, SaveFormat.dtype("auto", null));
        assertEquals(Dtype.F32, SaveFormat.dtype("float32", directory));
        assertEquals(Dtype.BF16, SaveFormat.dtype("bfloat16", null));
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> SaveFormat.dtype("int8", null));
        assertTrue(e.getMessage().contains("--save_dtype"), e.getMessage());
    }
}
