/**
 * The job's rendezvous: a small key-value store hosted by rank 0 at {@code
 * MASTER_ADDR:MASTER_PORT}, through which ranks exchange addresses and ids, wait for each other,
 * and record why a job failed. Every client presents the job token.
 */
package ai.djl.fsdp.rendezvous;
