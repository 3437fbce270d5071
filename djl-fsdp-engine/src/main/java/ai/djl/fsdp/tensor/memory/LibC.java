package ai.djl.fsdp.tensor.memory;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.Pointer;

/** The few C library calls {@link ReleasableMemory} makes (Linux x86-64 and aarch64 values). */
interface LibC extends Library {

    LibC INSTANCE = Native.load("c", LibC.class);

    int PROT_READ = 0x1;
    int PROT_WRITE = 0x2;
    int MAP_PRIVATE = 0x02;
    int MAP_ANONYMOUS = 0x20;
    int MADV_DONTNEED = 4;
    int SC_PAGESIZE = 30;

    Pointer mmap(Pointer address, long length, int protection, int flags, int fd, long offset);

    int munmap(Pointer address, long length);

    int madvise(Pointer address, long length, int advice);

    /** One byte per page of {@code [address, address + length)}; bit 0 set when resident. */
    int mincore(Pointer address, long length, byte[] residency);

    long sysconf(int name);
}
