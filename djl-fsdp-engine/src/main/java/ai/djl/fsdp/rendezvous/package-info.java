/**
 * The job's rendezvous: a small key-value store at {@code MASTER_ADDR:MASTER_PORT}, through which
 * ranks exchange addresses and ids, wait for each other, and record why a job failed. Rank 0 hosts
 * it ({@link ai.djl.fsdp.rendezvous.TcpStore}, whose clients present the job token), unless the
 * launcher's agent hosts a PyTorch TCPStore there ({@link ai.djl.fsdp.rendezvous.TorchStore}).
 */
package ai.djl.fsdp.rendezvous;
