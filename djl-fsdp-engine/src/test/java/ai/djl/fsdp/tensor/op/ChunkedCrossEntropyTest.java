package ai.djl.fsdp.tensor.op;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * How the chunked cross-entropy cuts its rows. Its losses and gradients are checked against float64
 * where it is used, in the zoo's {@code CausalLmLossTest}, which takes both its paths.
 */
class ChunkedCrossEntropyTest {

    @Test
    void oneChunkHoldsAtMostItsElements() {
        long chunk = ChunkedCrossEntropy.CHUNK_ELEMENTS;
        assertTrue(ChunkedCrossEntropy.fitsOneChunk(chunk / 1000, 1000));
        assertTrue(ChunkedCrossEntropy.fitsOneChunk(1, chunk));
        assertFalse(ChunkedCrossEntropy.fitsOneChunk(1, chunk + 1));
        assertFalse(ChunkedCrossEntropy.fitsOneChunk(2, chunk / 2 + 1));
    }

    @Test
    void headChunksAreOfNearlyOneSize() {
        assertEquals(147, ChunkedCrossEntropy.evenChunk(1024, 166)); // 6 chunks of 147, one of 142
        assertEquals(166, ChunkedCrossEntropy.evenChunk(166 * 6, 166));
        assertEquals(10, ChunkedCrossEntropy.evenChunk(10, 166));
        assertEquals(1, ChunkedCrossEntropy.evenChunk(5, 1));
    }
}
