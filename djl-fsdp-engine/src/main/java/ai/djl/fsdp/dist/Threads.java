package ai.djl.fsdp.dist;

/** How the watchdogs wait for their threads as they close. */
public final class Threads {

    private Threads() {}

    /**
     * Waits for {@code thread} to end, even if the caller is interrupted meanwhile; the interrupt
     * is kept for the caller.
     *
     * @param thread the thread to wait for
     */
    public static void joinUninterruptibly(Thread thread) {
        boolean interrupted = false;
        while (thread.isAlive()) {
            try {
                thread.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
