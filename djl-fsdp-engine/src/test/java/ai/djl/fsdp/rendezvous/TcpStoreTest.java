package ai.djl.fsdp.rendezvous;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class TcpStoreTest {

    private static final String TOKEN = "job-token";
    private static final Duration TIMEOUT = Duration.ofSeconds(2);

    private TcpStore host;

    @BeforeEach
    void startHost() {
        host =
                TcpStore.builder("127.0.0.1", 0)
                        .optHostServer(true)
                        .optToken(TOKEN)
                        .optTimeout(TIMEOUT)
                        .build();
    }

    @AfterEach
    void stopHost() {
        host.close();
    }

    private TcpStore client() {
        return TcpStore.builder("127.0.0.1", host.getPort())
                .optToken(TOKEN)
                .optTimeout(TIMEOUT)
                .build();
    }

    @Test
    void setGetAddAndWaitBetweenClients() throws Exception {
        try (TcpStore client = client()) {
            CompletableFuture<byte[]> waiting =
                    CompletableFuture.supplyAsync(() -> client.get("k"));
            host.set("k", new byte[] {1, 2, 3});
            assertArrayEquals(new byte[] {1, 2, 3}, waiting.get(5, TimeUnit.SECONDS));
            assertEquals(5, host.add("counter", 5));
            assertEquals(3, client.add("counter", -2));
            assertArrayEquals("3".getBytes(StandardCharsets.UTF_8), client.get("counter"));
            client.set("other", new byte[0]);
            host.waitFor(List.of("k", "other"));
        }
    }

    @Test
    void timeoutsNameWhatDidNotArrive() {
        StoreTimeoutException get =
                assertThrows(
                        StoreTimeoutException.class,
                        () -> host.get("never", Duration.ofMillis(100)));
        assertTrue(get.getMessage().contains("'never'"), get.getMessage());
        host.set("present", new byte[0]);
        StoreTimeoutException wait =
                assertThrows(
                        StoreTimeoutException.class,
                        () -> host.waitFor(List.of("present", "absent")));
        assertTrue(wait.getMessage().contains("[absent]"), wait.getMessage());
    }

    @Test
    void barrierWaitsForEveryRankAndNamesTheAbsent() throws Exception {
        try (TcpStore client = client()) {
            CompletableFuture<Void> rank1 =
                    CompletableFuture.runAsync(() -> client.barrier("start", 1, 2));
            host.barrier("start", 0, 2);
            rank1.get(5, TimeUnit.SECONDS);
            // The second use of a name is a fresh barrier, so rank 1's absence shows.
            StoreTimeoutException e =
                    assertThrows(StoreTimeoutException.class, () -> host.barrier("start", 0, 3));
            assertTrue(e.getMessage().contains("ranks [1, 2] of 3"), e.getMessage());
        }
    }

    @Test
    void clientRetriesUntilTheHostStarts() throws Exception {
        int port;
        try (ServerSocket probe = new ServerSocket(0)) {
            port = probe.getLocalPort();
        }
        CompletableFuture<TcpStore> early =
                CompletableFuture.supplyAsync(
                        () ->
                                TcpStore.builder("127.0.0.1", port)
                                        .optToken(TOKEN)
                                        .optTimeout(Duration.ofSeconds(20))
                                        .build());
        Thread.sleep(500);
        try (TcpStore late =
                        TcpStore.builder("127.0.0.1", port)
                                .optHostServer(true)
                                .optToken(TOKEN)
                                .optTimeout(TIMEOUT)
                                .build();
                TcpStore client = early.get(20, TimeUnit.SECONDS)) {
            client.set("hello", new byte[] {7});
            assertArrayEquals(new byte[] {7}, late.get("hello"));
        }
    }

    @Test
    void wrongTokenIsRefusedAndTheJobGoesOn() {
        StoreException e =
                assertThrows(
                        StoreException.class,
                        () ->
                                TcpStore.builder("127.0.0.1", host.getPort())
                                        .optToken("guess")
                                        .optTimeout(TIMEOUT)
                                        .build());
        assertTrue(e.getMessage().contains("refused"), e.getMessage());
        assertStillServes();
    }

    @Test
    void anotherRunWithTheSameTokenIsToldThePortIsTaken() {
        try (TcpStore other =
                TcpStore.builder("127.0.0.1", 0)
                        .optHostServer(true)
                        .optToken(TOKEN)
                        .optRunId("first")
                        .optTimeout(TIMEOUT)
                        .build()) {
            StoreException e =
                    assertThrows(
                            StoreException.class,
                            () ->
                                    TcpStore.builder("127.0.0.1", other.getPort())
                                            .optToken(TOKEN)
                                            .optRunId("second")
                                            .optTimeout(TIMEOUT)
                                            .build());
            assertTrue(e.getMessage().contains("in use by another job"), e.getMessage());
            other.set("still", new byte[] {1});
            assertArrayEquals(new byte[] {1}, other.get("still"));
        }
    }

    @Test
    void helloLongerThanTheTokenIsDroppedUnread() throws IOException {
        int tooLong = StoreProtocol.maxHelloBytes(TOKEN.length()) + 1;
        assertDisconnected(out -> out.writeInt(tooLong));
        assertStillServes();
    }

    @Test
    void malformedFramesAreRefused() throws IOException {
        // A length beyond the limit: dropped before anything is allocated.
        assertDisconnected(out -> out.writeInt(Integer.MAX_VALUE));
        // A stray protocol.
        assertDisconnected(
                out -> out.write("GET / HTTP/1.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII)));
        // A correct hello, then an unknown operation.
        assertDisconnected(
                out -> {
                    hello(out);
                    out.writeInt(1);
                    out.writeByte(99);
                });
        // A correct hello, then a value longer than its frame.
        assertDisconnected(
                out -> {
                    hello(out);
                    out.writeInt(8);
                    out.writeByte(1);
                    out.writeUTF("k");
                    out.writeInt(1000);
                });
        assertStillServes();
    }

    private void hello(DataOutputStream out) throws IOException {
        byte[] token = TOKEN.getBytes(StandardCharsets.UTF_8);
        out.writeInt(6 + token.length);
        out.writeInt(StoreProtocol.MAGIC);
        out.writeByte(StoreProtocol.VERSION);
        out.writeByte(0);
        out.write(token);
    }

    @FunctionalInterface
    private interface RawWrite {
        void to(DataOutputStream out) throws IOException;
    }

    /** Sends {@code bytes} on a raw connection and requires the server to hang up. */
    private void assertDisconnected(RawWrite bytes) throws IOException {
        try (Socket socket = new Socket("127.0.0.1", host.getPort())) {
            socket.setSoTimeout(5000);
            DataOutputStream out = new DataOutputStream(socket.getOutputStream());
            bytes.to(out);
            out.flush();
            DataInputStream in = new DataInputStream(socket.getInputStream());
            int length = in.readInt();
            if (length == 1) {
                assertEquals(StoreProtocol.STATUS_OK, in.readByte(), "the hello's reply");
            } else {
                throw new AssertionError("unexpected reply of " + length + " bytes");
            }
            assertEquals(-1, in.read(), "the server must hang up");
        } catch (EOFException | SocketException e) {
            // Hung up before any reply: refused.
        }
    }

    private void assertStillServes() {
        try (TcpStore client = client()) {
            client.set("after", new byte[] {42});
            assertArrayEquals(new byte[] {42}, host.get("after"));
        }
    }

    @Test
    void unreachableStoreFailsWithAHint() throws IOException {
        int port;
        try (ServerSocket probe = new ServerSocket(0)) {
            port = probe.getLocalPort();
        }
        StoreException e =
                assertThrows(
                        StoreException.class,
                        () ->
                                TcpStore.builder("127.0.0.1", port)
                                        .optToken(TOKEN)
                                        .optTimeout(Duration.ofMillis(300))
                                        .build());
        assertTrue(e.getMessage().contains("Is rank 0 running"), e.getMessage());
    }
}
