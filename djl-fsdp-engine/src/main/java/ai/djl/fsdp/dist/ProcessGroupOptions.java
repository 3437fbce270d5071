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

    /**
     * The environment variable that sets the default {@link #getTimeout()} in seconds; {@code
     * bin/fsdp launch --timeout} sets it for its ranks.
     */
    public static final String TIMEOUT_VARIABLE = "DJL_FSDP_TIMEOUT";

    /** The environment variable that sets the default {@link #getHeartbeatTimeout()} in seconds. */
    public static final String HEARTBEAT_TIMEOUT_VARIABLE = "DJL_FSDP_HEARTBEAT_TIMEOUT";

    private static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(60);

    /**
     * A stopped rank is found this long after its last heartbeat. Heartbeats are sent by a thread
     * of their own over a store connection of their own, so compute, collectives and saves of any
     * length do not delay them; only what stops every thread of the JVM does (a stopped process, a
     * frozen machine, a garbage-collection pause, a few seconds at most on a training heap).
     */
    private static final Duration DEFAULT_HEARTBEAT_TIMEOUT = Duration.ofSeconds(30);

    private final Device device;
    private final Duration timeout;
    private final Duration heartbeatTimeout;
    private final Duration collectiveTimeout;
    private final int socketChunkBytes;
    private final int socketBufferBytes;
    private final boolean peerMemoryCopy;

    private ProcessGroupOptions(Builder builder) {
        device = builder.device;
        timeout = builder.timeout;
        heartbeatTimeout =
                builder.heartbeatTimeout != null
                        ? builder.heartbeatTimeout
                        : min(timeout, DEFAULT_HEARTBEAT_TIMEOUT);
        collectiveTimeout = builder.collectiveTimeout;
        socketChunkBytes = builder.socketChunkBytes;
        socketBufferBytes = builder.socketBufferBytes;
        peerMemoryCopy = builder.peerMemoryCopy;
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
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
    public Optional<Device> getDevice() {
        return Optional.ofNullable(device);
    }

    /**
     * Returns how long a rank may show no sign of life before the others fail: the wait to reach
     * the store and the other ranks at start-up (NCCL: the communicator's set-up and splits), and
     * for a store call. Once the group is up, a stopped peer is found by {@link
     * #getHeartbeatTimeout()}, and a peer that is alive but busy (a long forward) keeps sending
     * heartbeats and is waited for up to {@link #getCollectiveTimeout()}.
     */
    public Duration getTimeout() {
        return timeout;
    }

    /**
     * Returns the heartbeat watchdog's limit, on either backend, for a peer that sends no heartbeat
     * or a store host that does not answer: how soon a stopped rank ends the job (the socket ring
     * closes its links, NCCL aborts its communicators). Heartbeats come from a thread of their own,
     * whatever the rank computes, so a busy rank never reaches it.
     */
    public Duration getHeartbeatTimeout() {
        return heartbeatTimeout;
    }

    /**
     * Returns the longest a collective waits for a peer that is alive (its heartbeats arrive) but
     * does not take part: a rank that is busy for longer, or calls other collectives, fails the job
     * after this time (NCCL: the watchdog aborts the communicator).
     */
    public Duration getCollectiveTimeout() {
        return collectiveTimeout;
    }

    /** Returns how many incoming bytes the socket backend reduces at a time. */
    public int getSocketChunkBytes() {
        return socketChunkBytes;
    }

    /** Returns the socket buffer size the socket backend asks for; 0 leaves it to the system. */
    public int getSocketBufferBytes() {
        return socketBufferBytes;
    }

    /**
     * Returns whether the socket backend's ranks on one machine copy each other's arrays straight
     * from memory where the system allows it, rather than streaming them through sockets.
     */
    public boolean isPeerMemoryCopy() {
        return peerMemoryCopy;
    }

    /** Builds {@link ProcessGroupOptions}. */
    public static final class Builder {
        private Device device;
        private Duration timeout = defaultTimeout(System.getenv(TIMEOUT_VARIABLE));
        private Duration heartbeatTimeout =
                fromVariable(
                        HEARTBEAT_TIMEOUT_VARIABLE,
                        System.getenv(HEARTBEAT_TIMEOUT_VARIABLE),
                        null);
        private Duration collectiveTimeout = Duration.ofMinutes(30);
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
         * Sets how long a rank may show no sign of life (see {@link
         * ProcessGroupOptions#getTimeout()}); the default is {@value #TIMEOUT_VARIABLE} seconds
         * from the environment, else 60 seconds.
         */
        public Builder optTimeout(Duration timeout) {
            this.timeout = positive(timeout, "the timeout");
            return this;
        }

        /**
         * Sets how long a peer may send no heartbeat (see {@link
         * ProcessGroupOptions#getHeartbeatTimeout()}); the default is {@value
         * #HEARTBEAT_TIMEOUT_VARIABLE} seconds from the environment, else 30 seconds or the
         * timeout, whichever is shorter.
         */
        public Builder optHeartbeatTimeout(Duration heartbeatTimeout) {
            this.heartbeatTimeout = positive(heartbeatTimeout, "the heartbeat timeout");
            return this;
        }

        /**
         * Sets the longest a collective waits for a live peer that does not take part (see {@link
         * ProcessGroupOptions#getCollectiveTimeout()}); the default is 30 minutes.
         */
        public Builder optCollectiveTimeout(Duration collectiveTimeout) {
            this.collectiveTimeout = positive(collectiveTimeout, "the collective timeout");
            return this;
        }

        private static Duration positive(Duration duration, String what) {
            if (duration.isNegative() || duration.isZero()) {
                throw new IllegalArgumentException(what + " must be positive: " + duration);
            }
            return duration;
        }

        static Duration defaultTimeout(String seconds) {
            return fromVariable(TIMEOUT_VARIABLE, seconds, DEFAULT_TIMEOUT);
        }

        /** Returns variable {@code name}'s {@code seconds}, or {@code unset} when it is unset. */
        private static Duration fromVariable(String name, String seconds, Duration unset) {
            if (seconds == null || seconds.isBlank()) {
                return unset;
            }
            try {
                double value = Double.parseDouble(seconds.trim());
                if (value > 0 && value <= Integer.MAX_VALUE) {
                    return Duration.ofMillis((long) Math.ceil(value * 1000));
                }
            } catch (NumberFormatException e) {
                // reported below
            }
            throw new IllegalArgumentException(
                    name
                            + "='"
                            + seconds
                            + "' is not a positive number of seconds; unset it for the default, or"
                            + " give e.g. 120");
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
