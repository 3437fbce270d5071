package ai.djl.fsdp.rendezvous;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.function.Function;

/**
 * Connects a store client, retrying with growing pauses until a deadline: the store's host may not
 * listen yet (rank 0 or the launcher may start after this rank), or may turn connections away for a
 * moment. Shared by {@link TcpStore} and {@link TorchStore}, which say in their own words what to
 * check when the deadline passes.
 */
final class StoreConnector {

    private static final long FIRST_PAUSE_MILLIS = 50;
    private static final long MAX_PAUSE_MILLIS = Duration.ofSeconds(1).toMillis();

    private StoreConnector() {}

    /** What a try does with a socket that connected: its failure means try again. */
    @FunctionalInterface
    interface Attempt<T> {

        /**
         * Finishes the connection (a handshake, say) and returns the client.
         *
         * @throws IOException or a {@link StoreException}: try again, unless it is {@link Refused}
         */
        T connected(Socket socket) throws IOException;
    }

    /** The store answered with a refusal: trying again cannot help. */
    static final class Refused extends StoreException {
        private static final long serialVersionUID = 1L;

        Refused(String message) {
            super(message);
        }
    }

    /**
     * Checks a store client's timeout.
     *
     * @param timeout the longest any call (connecting included) waits
     * @return {@code timeout}
     * @throws IllegalArgumentException if it is not positive
     */
    static Duration requirePositive(Duration timeout) {
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("the store timeout must be positive: " + timeout);
        }
        return timeout;
    }

    /**
     * Connects to {@code host:port} and runs {@code attempt} on the socket, both retried until
     * {@code deadline} ({@link System#nanoTime}); a failed try's socket is closed.
     *
     * @param giveUp the error to throw at the deadline, given the last try's failure
     * @return what {@code attempt} returned
     * @throws StoreException from {@code giveUp}, a {@link Refused}, or if interrupted
     */
    static <T> T connect(
            String host,
            int port,
            long deadline,
            Attempt<T> attempt,
            Function<Exception, StoreException> giveUp) {
        long pauseMillis = FIRST_PAUSE_MILLIS;
        Exception last;
        do {
            Socket socket = new Socket();
            try {
                long left = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
                socket.connect(
                        new InetSocketAddress(host, port), (int) Math.min(left, Integer.MAX_VALUE));
                socket.setTcpNoDelay(true);
                return attempt.connected(socket);
            } catch (IOException | StoreException e) {
                close(socket);
                if (e instanceof Refused) {
                    throw (Refused) e;
                }
                last = e;
            } catch (RuntimeException e) {
                close(socket);
                throw e;
            }
            try {
                Thread.sleep(pauseMillis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new StoreException("interrupted while connecting to the store", e);
            }
            pauseMillis = Math.min(pauseMillis * 2, MAX_PAUSE_MILLIS);
        } while (System.nanoTime() < deadline);
        throw giveUp.apply(last);
    }

    /**
     * Returns {@code wait} as a socket read timeout: at least 1 ms (0 would wait forever), at most
     * {@code Integer.MAX_VALUE} ms (24.8 days; a longer timeout waits that long).
     */
    static int readTimeoutMillis(Duration wait) {
        long millis = wait.toMillis();
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, millis));
    }

    private static void close(Socket socket) {
        try {
            socket.close();
        } catch (IOException ignored) {
            // the try failed already; its error is the one that counts
        }
    }
}
