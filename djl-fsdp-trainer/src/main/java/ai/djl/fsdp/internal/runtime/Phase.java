package ai.djl.fsdp.internal.runtime;

/** What the model is doing between steps. */
enum Phase {
    /** No pass is under way. */
    IDLE,
    /** A forward pass that no backward follows: units are resharded as they finish. */
    INFERENCE,
    /** A training forward: unit calls are recorded on the tape until backward. */
    RECORDING
}
