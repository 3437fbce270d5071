package ai.djl.fsdp.rendezvous;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A FAKE PyTorch TCPStore server for unit tests, written here from the wire protocol that {@link
 * TorchStoreWire} describes (not PyTorch's code): enough of SET, GET, ADD, CHECK, WAIT and
 * GETNUMKEYS, in either dialect, for testing {@link TorchStore} where PyTorch is not installed. The
 * real server is tested by {@code TorchrunTest} where it is.
 */
final class FakeTorchStoreServer implements AutoCloseable {

    /** How the fake behaves. */
    enum Mode {
        /** Older PyTorch: no handshake, {@code SET=0}. */
        LEGACY,
        /** Newer PyTorch, classic server: drops a connection that does not begin validated. */
        VALIDATED_CLOSING,
        /** Newer PyTorch, libuv server: ignores a connection that does not begin validated. */
        VALIDATED_IGNORING
    }

    private final Mode mode;
    private final ServerSocket server;
    private final Map<String, byte[]> values = new HashMap<>();
    private final List<Socket> connections = new CopyOnWriteArrayList<>();
    private volatile boolean frozen;

    FakeTorchStoreServer(Mode mode) throws IOException {
        this.mode = mode;
        server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(this::accept, "fake-torch-store");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    int port() {
        return server.getLocalPort();
    }

    /** Stops answering, as a stopped (SIGSTOP) host would; connections are still accepted. */
    void freeze() {
        frozen = true;
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket socket = server.accept();
                connections.add(socket);
                Thread thread = new Thread(() -> serve(socket), "fake-torch-store-connection");
                thread.setDaemon(true);
                thread.start();
            } catch (IOException e) {
                return;
            }
        }
    }

    private void serve(Socket socket) {
        try (socket) {
            DataInputStream in =
                    new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            OutputStream out = socket.getOutputStream();
            int offset = mode == Mode.LEGACY ? 0 : 1;
            if (mode != Mode.LEGACY) {
                if (in.readUnsignedByte() != 0
                        || Integer.reverseBytes(in.readInt()) != 0x3C85F7CE) {
                    if (mode == Mode.VALIDATED_IGNORING) {
                        Thread.sleep(Long.MAX_VALUE);
                    }
                    return;
                }
            }
            while (true) {
                int query = in.readUnsignedByte() - offset;
                while (frozen) {
                    Thread.sleep(50);
                }
                if (!answer(query, in, out)) {
                    return;
                }
                out.flush();
            }
        } catch (IOException | InterruptedException e) {
            // the client left, or the fake was closed
        }
    }

    /** Answers one query; false closes the connection, as PyTorch does on a missing key. */
    private boolean answer(int query, DataInputStream in, OutputStream out)
            throws IOException, InterruptedException {
        switch (query) {
            case TorchStoreWire.SET:
                {
                    String key = string(in);
                    byte[] value = bytes(in);
                    synchronized (values) {
                        values.put(key, value);
                        values.notifyAll();
                    }
                    return true;
                }
            case TorchStoreWire.GET:
                {
                    byte[] value;
                    synchronized (values) {
                        value = values.get(string(in));
                    }
                    if (value == null) {
                        return false;
                    }
                    out.write(int64(value.length));
                    out.write(value);
                    return true;
                }
            case TorchStoreWire.ADD:
                {
                    String key = string(in);
                    long sum = Long.reverseBytes(in.readLong());
                    synchronized (values) {
                        byte[] old = values.get(key);
                        if (old != null) {
                            sum += Long.parseLong(new String(old, StandardCharsets.UTF_8));
                        }
                        values.put(key, Long.toString(sum).getBytes(StandardCharsets.UTF_8));
                        values.notifyAll();
                    }
                    out.write(int64(sum));
                    return true;
                }
            case TorchStoreWire.CHECK:
            case TorchStoreWire.WAIT:
                {
                    long count = Long.reverseBytes(in.readLong());
                    String[] keys = new String[(int) count];
                    for (int i = 0; i < count; i++) {
                        keys[i] = string(in);
                    }
                    synchronized (values) {
                        while (query == TorchStoreWire.WAIT && !allSet(keys)) {
                            values.wait(100);
                        }
                        out.write(allSet(keys) ? 0 : 1);
                    }
                    return true;
                }
            case TorchStoreWire.GETNUMKEYS:
                synchronized (values) {
                    out.write(int64(values.size()));
                }
                return true;
            default:
                return false;
        }
    }

    private boolean allSet(String[] keys) {
        for (String key : keys) {
            if (!values.containsKey(key)) {
                return false;
            }
        }
        return true;
    }

    private static String string(DataInputStream in) throws IOException {
        return new String(bytes(in), StandardCharsets.UTF_8);
    }

    private static byte[] bytes(DataInputStream in) throws IOException {
        byte[] value = new byte[Math.toIntExact(Long.reverseBytes(in.readLong()))];
        in.readFully(value);
        return value;
    }

    private static byte[] int64(long value) {
        return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(value).array();
    }

    @Override
    public void close() throws IOException {
        server.close();
        for (Socket socket : connections) {
            socket.close();
        }
    }
}
