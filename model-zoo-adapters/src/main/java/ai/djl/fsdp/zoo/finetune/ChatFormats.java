package ai.djl.fsdp.zoo.finetune;

import ai.djl.fsdp.zoo.chat.ChatFormat;
import ai.djl.fsdp.zoo.chat.ChatTemplate;
import ai.djl.fsdp.zoo.chat.JinjaChatTemplate;
import ai.djl.fsdp.zoo.finetune.args.FinetuneArguments;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;

/** How a {@code finetune} run renders conversations, decided from its flags and tokenizer. */
final class ChatFormats {

    private ChatFormats() {}

    /**
     * The rendering of conversations: {@code --chat_template_format chatml}, or without the flag
     * the tokenizer's own {@code chat_template} (its {@code tokenizer_config.json}) if it has one,
     * with the variables of {@code --chat_template_kwargs}, else ChatML.
     */
    static ChatFormat of(FinetuneArguments args, Path tokenizer) throws IOException {
        String flag = args.chatTemplateFormat;
        if (flag != null && !"chatml".equals(flag)) {
            throw new IllegalArgumentException(
                    "--chat_template_format "
                            + flag
                            + " is not supported: give chatml, or leave the flag out to render"
                            + " conversations with the tokenizer's own chat_template");
        }
        Map<String, Object> variables = args.chatTemplateVariables();
        JinjaChatTemplate own =
                flag != null || tokenizer == null
                        ? null
                        : JinjaChatTemplate.read(config(tokenizer));
        if (own == null && !variables.isEmpty()) {
            throw new IllegalArgumentException(
                    "--chat_template_kwargs gives variables to the tokenizer's own chat_template,"
                            + " but conversations are rendered with ChatML, which takes none:"
                            + " leave the flag out, or give a tokenizer whose"
                            + " tokenizer_config.json has a chat_template");
        }
        return own == null ? ChatTemplate.CHATML : own.withVariables(variables);
    }

    /** The {@code tokenizer_config.json} beside a tokenizer, which holds its chat template. */
    static Path config(Path tokenizer) {
        return tokenizer.toAbsolutePath().resolveSibling(ChatTemplate.CONFIG_FILE);
    }
}
