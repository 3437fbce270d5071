package ai.djl.fsdp.dist;

import ai.djl.Device;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * How {@link ProcessGroups#init(DistributedEnv, ProcessGroupOptions)} builds a process group.
 *
 * <p>Build with {@link #builder()}; {@link #defaults()} suits most jobs.
 */
public final class ProcessGroupOptions {

    private final Device device;
    private final Duration timeout;
    private final int socketChunkBytes;
    private final int socketBufferBytes;
    private final boolean peerMemoryCopy;

    private ProcessGroupOptions(Builder builder) {
        device = builder.device;
        timeout = builder.timeout;
        socketChunkBytes = builder.socketChunkBytes;
        socketBufferBytes = builder.socketBufferBytes;
        peerMemoryCopy = builder.peerMemoryCopy;
    }

    /** Returns the default options. */
    public static ProcessGroupOptions defaults() {
        return builder().build();
    }

    /** Returns a builder with the default options. */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Returns the device whose arrays the group moves, which chooses the backend; empty means the
     * rank's own device ({@link RankDevice#of}).
     */
    public Optional<Device> device() {
        return Optional.ofNullable(device);
    }

    /**
     * Returns the longest the group waits: to reach the store and the other ranks at start-up, for
     * a store call, for a peer that sends nothing during a collective (socket backend), and for a
     * queued collective to finish (NCCL's watchdog, which then aborts the communicator).
     */
    public Duration timeout() {
        return timeout;
    }

    /** Returns how many incoming bytes the socket backend reduces at a time. */
    public int socketChunkBytes() {
        return socketChunkBytes;
    }

    /** Returns the socket buffer size the socket backend asks for; 0 leaves it to the system. */
    public int socketBufferBytes() {
        return socketBufferBytes;
    }

    /**
     * Returns whether the socket backend's ranks on one machine copy each other's arrays straight
     * from memory where the system allows it, rather than streaming them through sockets.
     */
    public boolean peerMemoryCopy() {
        return peerMemoryCopy;
    }

    /** Builds {@link ProcessGroupOptions}. */
    public static final class Builder {
        private Device device;
        private Duration timeout = Duration.ofMinutes(10);
        private int socketChunkBytes = 1 << 20;
        private int socketBufferBytes;
        private boolean peerMemoryCopy = true;

        Builder() {}

        /**
         * Sets the device whose arrays the group moves; by default the rank's own ({@link
         * RankDevice#of}: GPU {@code LOCAL_RANK} where there are GPUs, else the CPU).
         */
        public Builder optDevice(Device device) {
            this.device = Objects.requireNonNull(device, "device");
            return this;
        }

        /**
         * Sets the longest the group waits (see {@link ProcessGroupOptions#timeout()}); the default
         * is 10 minutes, since a rank may legitimately wait that long for a slow peer.
         */
        public Builder optTimeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("the timeout must be positive: " + timeout);
            }
            this.timeout = timeout;
            return this;
        }

        /** Sets how many bytes a reduction combines at a time; the default is 1 MiB. */
        public Builder optSocketChunkBytes(int bytes) {
            if (bytes < 64) {
                throw new IllegalArgumentException(
                        "the chunk size must be at least 64 bytes: " + bytes);
            }
            this.socketChunkBytes = bytes;
            return this;
        }

        /**
         * Sets the socket send and receive buffer size; the default 0 leaves it to the system,
         * whose automatic tuning usually grows larger than a fixed request may.
         */
        public Builder optSocketBufferBytes(int bytes) {
            if (bytes < 0) {
                throw new IllegalArgumentException(
                        "the socket buffer size cannot be negative: " + bytes);
            }
            this.socketBufferBytes = bytes;
            return this;
        }

        /**
         * Sets whether ranks on one machine copy each other's arrays straight from memory (Linux
         * cross-memory attach) where the system allows it; the default is true. Off, every link
         * streams through a socket.
         */
        public Builder optPeerMemoryCopy(boolean peerMemoryCopy) {
            this.peerMemoryCopy = peerMemoryCopy;
            return this;
        }

        /** Returns the options. */
        public ProcessGroupOptions build() {
            return new ProcessGroupOptions(this);
        }
    }
}
