package ai.djl.fsdp.param;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import ai.djl.fsdp.checkpoint.ShardLoader;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.initializer.Initializer;
import java.util.List;
import org.junit.jupiter.api.Test;

class BufferPoolTest {

    @Test
    void aGivenBackArrayIsLentAgainForTheSameSizeAndTypeOnly() {
        try (NDManager manager = NDManager.newBaseManager();
                BufferPool pool = new BufferPool()) {
            NDManager first = manager.newSubManager();
            NDArray a = pool.lend(first, 6, Precision.FLOAT32);
            long address = TensorMemory.dataPointer(a);
            pool.giveBack(a);
            // The borrower's scope closes its alias; the pooled memory stays.
            first.close();
            assertEquals(24, pool.getFreeBytes());
            NDArray other = pool.lend(manager, 5, Precision.FLOAT32);
            NDArray bf16 = pool.lend(manager, 6, Precision.BFLOAT16);
            NDArray again = pool.lend(manager, 6, Precision.FLOAT32);
            assertEquals(address, TensorMemory.dataPointer(again));
            assertNotEquals(address, TensorMemory.dataPointer(other));
            assertNotEquals(address, TensorMemory.dataPointer(bf16));
            assertEquals(0, pool.getFreeBytes());
            assertThrows(IllegalArgumentException.class, () -> pool.giveBack(a));
            pool.giveBack(other);
            pool.trim();
            assertEquals(0, pool.getFreeBytes());
        }
    }

    @Test
    void aPooledGatherBufferIsReusedByTheNextFlatParameterOfItsSize() {
        try (NDManager manager = NDManager.newBaseManager();
                BufferPool pool = new BufferPool()) {
            FlatParameter u = flat(manager, "u");
            FlatParameter v = flat(manager, "v");
            u.useBufferPool(pool);
            v.useBufferPool(pool);
            long address = TensorMemory.dataPointer(u.allocateFull(Precision.FLOAT32, false));
            u.freeFull();
            assertEquals(
                    address, TensorMemory.dataPointer(v.allocateFull(Precision.FLOAT32, false)));
            v.freeFull();
            assertEquals(8 * 4, pool.getFreeBytes());
        }
    }

    private static FlatParameter flat(NDManager manager, String name) {
        Parameter parameter =
                Parameter.builder()
                        .setName(name)
                        .setType(Parameter.Type.WEIGHT)
                        .optShape(new Shape(7))
                        .optInitializer(Initializer.ONES)
                        .build();
        parameter.initialize(manager, DataType.FLOAT32);
        // 7 elements over 2 ranks: a padded full buffer of 8.
        return new ShardLoader(2, 0, manager, null, null).load(name, true, List.of(parameter));
    }
}
