package ai.djl.fsdp.dist.socket;

import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.NativeLong;
import com.sun.jna.Platform;
import com.sun.jna.Pointer;
import java.io.IOException;
import java.nio.ByteBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads another process's memory with Linux's cross-memory attach ({@code process_vm_readv}): one
 * copy straight from a neighbour's array into this rank's, where a socket costs a copy into the
 * kernel and another out of it. MPI libraries move intra-node messages the same way.
 *
 * <p>The kernel allows it only where this process may trace the other (same user; no Yama
 * restriction or seccomp filter in the way), so the ring probes it per link and streams through the
 * socket where it fails.
 */
final class PeerMemory {

    private static final Logger logger = LoggerFactory.getLogger(PeerMemory.class);

    private static final CLibrary LIBC = load();

    private PeerMemory() {}

    /** The one libc call this class needs; an iovec is two longs (base, length). */
    interface CLibrary extends Library {
        NativeLong process_vm_readv(
                int pid,
                long[] localIov,
                NativeLong localCount,
                long[] remoteIov,
                NativeLong remoteCount,
                NativeLong flags)
                throws LastErrorException;
    }

    private static CLibrary load() {
        if (!Platform.isLinux() || !Platform.is64Bit()) {
            return null;
        }
        try {
            return Native.load("c", CLibrary.class);
        } catch (UnsatisfiedLinkError e) {
            logger.debug("No process_vm_readv here; ranks on one machine stream", e);
            return null;
        }
    }

    /** Returns whether this platform has the call at all (a peer may still refuse it). */
    static boolean available() {
        return LIBC != null;
    }

    /** Returns the address of {@code buffer}'s position; the buffer must be direct. */
    static long address(ByteBuffer buffer) {
        return Pointer.nativeValue(Native.getDirectBufferPointer(buffer)) + buffer.position();
    }

    /**
     * Copies {@code length} bytes at {@code remoteAddress} in process {@code pid} into {@code
     * destination} at its position, and advances the position.
     *
     * @throws IOException if the process is gone or the kernel refuses
     */
    static void read(long pid, long remoteAddress, ByteBuffer destination, int length)
            throws IOException {
        long local = address(destination);
        long done = 0;
        while (done < length) {
            long[] localIov = {local + done, length - done};
            long[] remoteIov = {remoteAddress + done, length - done};
            long n;
            try {
                n =
                        LIBC.process_vm_readv(
                                        (int) pid,
                                        localIov,
                                        new NativeLong(1),
                                        remoteIov,
                                        new NativeLong(1),
                                        new NativeLong(0))
                                .longValue();
            } catch (LastErrorException e) {
                throw new IOException(
                        "process_vm_readv from process "
                                + pid
                                + " failed with"
                                + " errno "
                                + e.getErrorCode(),
                        e);
            }
            if (n <= 0) {
                throw new IOException("process_vm_readv from process " + pid + " read nothing");
            }
            done += n;
        }
        destination.position(destination.position() + length);
    }
}
