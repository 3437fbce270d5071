/**
 * The flags of {@code finetune}, with Hugging Face's, TRL's and Accelerate's names: the run's
 * ({@link ai.djl.fsdp.zoo.finetune.args.FinetuneArguments}, with the task's, {@link
 * ai.djl.fsdp.zoo.finetune.args.Seq2SeqArguments}), FSDP's ({@link
 * ai.djl.fsdp.zoo.finetune.args.FsdpArguments}), checkpoints' ({@link
 * ai.djl.fsdp.zoo.finetune.args.CheckpointArguments}) and those accepted for compatibility ({@link
 * ai.djl.fsdp.zoo.finetune.args.HubCompatibility}), and the checks of their values that need no
 * file ({@link ai.djl.fsdp.zoo.finetune.args.ArgumentChecks}). Their option fields are public:
 * picocli sets them, the command and its recipe read them.
 */
package ai.djl.fsdp.zoo.finetune.args;
