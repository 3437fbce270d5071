/**
 * How conversations become text: the ChatML template ({@link ai.djl.fsdp.zoo.chat.ChatTemplate})
 * and a tokenizer's own Jinja chat template ({@link ai.djl.fsdp.zoo.chat.JinjaChatTemplate}), both
 * {@link ai.djl.fsdp.zoo.chat.ChatFormat}s, rendered as Hugging Face renders them. Used by {@code
 * finetune} to train on conversations and by {@code generate} to prompt a chat model.
 */
package ai.djl.fsdp.zoo.chat;
