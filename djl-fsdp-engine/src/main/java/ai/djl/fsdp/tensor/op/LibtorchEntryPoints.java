package ai.djl.fsdp.tensor.op;

import ai.djl.fsdp.tensor.AotiTorch;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Binds a class's static native methods, named by C++ mangled names, to the operator entry points
 * ({@code at::_ops::<name>::call}) that {@code libtorch_cpu.so} exports: the calls libtorch's own
 * {@code at::} functions make, which enter the dispatcher with the calling thread's keys. Such
 * calls follow the x86-64 System V C++ ABI, so they are bound on Linux x86-64 alone; a system
 * property set to {@code false} keeps each one unbound, the way back to the composed form it
 * replaces.
 */
final class LibtorchEntryPoints {

    private static final Logger logger = LoggerFactory.getLogger(LibtorchEntryPoints.class);

    private LibtorchEntryPoints() {}

    /**
     * Registers {@code holder}'s native methods against {@code libtorch_cpu.so}, or logs one line
     * saying why not.
     *
     * @param holder the class whose static native methods are the entry points
     * @param property the system property that, set to {@code false}, keeps them unbound
     * @param entry the mangled name the log line names when the library lacks it
     * @param fallback what runs instead, for the log line, such as "GELU (tanh) runs in DJL's
     *     operators"
     * @return whether the entry points are bound
     */
    static boolean bind(Class<?> holder, String property, String entry, String fallback) {
        String why = reasonNotToBind(property);
        if (why == null) {
            try {
                Native.register(
                        holder,
                        NativeLibrary.getInstance(
                                AotiTorch.directory().resolve("libtorch_cpu.so").toString()));
                return true;
            } catch (UnsatisfiedLinkError e) {
                why = "libtorch_cpu.so does not export " + entry;
            }
        }
        logger.info("{}, not libtorch's fused kernel: {}", fallback, why);
        return false;
    }

    /** Returns why this process does not bind the entry points, or null if it does. */
    private static String reasonNotToBind(String property) {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "");
        if ("false".equalsIgnoreCase(System.getProperty(property))) {
            return "-D" + property + "=false";
        }
        if (!os.startsWith("linux") || !("amd64".equals(arch) || "x86_64".equals(arch))) {
            return "the call's ABI is Linux x86-64's and this is " + os + " " + arch;
        }
        return null;
    }
}
