package ai.djl.fsdp.rendezvous;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@link TorchStore} against {@link FakeTorchStoreServer}, a fake written from PyTorch's wire
 * protocol, in each dialect; {@code TorchrunTest} runs ranks against a real torchrun's store.
 */
class TorchStoreTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(2);

    private static TorchStore client(FakeTorchStoreServer server, String prefix) {
        return TorchStore.builder("127.0.0.1", server.port())
                .optKeyPrefix(prefix)
                .optTimeout(TIMEOUT)
                .build();
    }

    @ParameterizedTest
    @EnumSource(FakeTorchStoreServer.Mode.class)
    void speaksEachDialect(FakeTorchStoreServer.Mode mode) throws Exception {
        try (FakeTorchStoreServer server = new FakeTorchStoreServer(mode);
                TorchStore a = client(server, "job/");
                TorchStore b = a.newClient(TIMEOUT)) {
            TorchStoreWire.Dialect expected =
                    mode == FakeTorchStoreServer.Mode.LEGACY
                            ? TorchStoreWire.Dialect.LEGACY
                            : TorchStoreWire.Dialect.VALIDATED;
            assertEquals(expected, a.dialect());

            CompletableFuture<byte[]> waiting = CompletableFuture.supplyAsync(() -> b.get("k"));
            a.set("k", new byte[] {1, 2, 3});
            assertArrayEquals(new byte[] {1, 2, 3}, waiting.get(5, TimeUnit.SECONDS));
            assertEquals(5, a.add("counter", 5));
            assertEquals(7, b.add("counter", 2));
            assertEquals("7", new String(a.get("counter", Duration.ZERO), StandardCharsets.UTF_8));

            assertThrows(StoreTimeoutException.class, () -> a.get("absent", Duration.ZERO));
            StoreTimeoutException late =
                    assertThrows(
                            StoreTimeoutException.class,
                            () -> a.get("absent", Duration.ofMillis(200)));
            assertTrue(late.getMessage().contains("'absent'"), late.getMessage());
            // The connection was replaced after the timed-out wait and still works.
            a.set("after", new byte[] {9});
            // SET has no reply in the protocol: wait for it to be applied rather than race it.
            assertArrayEquals(new byte[] {9}, b.get("after", Duration.ofSeconds(5)));

            StoreTimeoutException missing =
                    assertThrows(
                            StoreTimeoutException.class, () -> a.waitFor(List.of("k", "nope")));
            assertTrue(missing.getMessage().contains("[nope]"), missing.getMessage());

            CompletableFuture<Void> other =
                    CompletableFuture.runAsync(() -> b.barrier("start", 1, 2));
            a.barrier("start", 0, 2);
            other.get(5, TimeUnit.SECONDS);
            StoreTimeoutException alone =
                    assertThrows(StoreTimeoutException.class, () -> a.barrier("once", 0, 2));
            assertTrue(alone.getMessage().contains("ranks [1] of 2"), alone.getMessage());
        }
    }

    @Test
    void prefixesKeepJobsApart() throws Exception {
        try (FakeTorchStoreServer server =
                        new FakeTorchStoreServer(FakeTorchStoreServer.Mode.LEGACY);
                TorchStore first = client(server, "attempt0/");
                TorchStore second = client(server, "attempt1/")) {
            first.set("k", new byte[] {1});
            assertThrows(StoreTimeoutException.class, () -> second.get("k", Duration.ZERO));
            assertEquals(1, first.add("n", 1));
            assertEquals(1, second.add("n", 1));
        }
    }

    @Test
    void aStoppedHostIsReportedWithinTheTimeout() throws Exception {
        try (FakeTorchStoreServer server =
                        new FakeTorchStoreServer(FakeTorchStoreServer.Mode.VALIDATED_CLOSING);
                TorchStore store = client(server, "")) {
            server.freeze();
            long start = System.nanoTime();
            StoreException e = assertThrows(StoreException.class, () -> store.add("n", 1));
            assertTrue(e.getMessage().contains("did not answer"), e.getMessage());
            assertTrue(System.nanoTime() - start < TIMEOUT.multipliedBy(3).toNanos());
        }
    }

    @Test
    void nobodyListeningIsNamed() {
        StoreException e =
                assertThrows(
                        StoreException.class,
                        () ->
                                TorchStore.builder("127.0.0.1", 1)
                                        .optTimeout(Duration.ofMillis(300))
                                        .build());
        assertTrue(e.getMessage().contains("TORCHELASTIC_USE_AGENT_STORE"), e.getMessage());
    }
}
