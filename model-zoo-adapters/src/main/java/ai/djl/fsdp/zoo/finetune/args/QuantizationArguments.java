package ai.djl.fsdp.zoo.finetune.args;

import ai.djl.fsdp.zoo.hf.QuantizationConfig;
import picocli.CommandLine.Option;

/**
 * The 4-bit flags of PEFT's QLoRA recipe, with its defaults, resolved into the {@link
 * QuantizationConfig} transformers' {@code BitsAndBytesConfig} would be built from them.
 */
public final class QuantizationArguments {

    @Option(
            names = "--use_4bit_quantization",
            arity = "0..1",
            fallbackValue = "true",
            description = "A 4-bit (bitsandbytes) base.")
    boolean use4bitQuantization;

    @Option(
            names = "--use_8bit_quantization",
            arity = "0..1",
            fallbackValue = "true",
            description = "Refused: 8-bit (LLM.int8) weights are not supported.")
    boolean use8bitQuantization;

    @Option(
            names = "--use_nested_quant",
            arity = "0..1",
            fallbackValue = "true",
            description = "Quantize the 4-bit block scales again (double quantization).")
    boolean useNestedQuant;

    @Option(
            names = "--bnb_4bit_quant_type",
            defaultValue = "nf4",
            description = "The 4-bit code: nf4 or fp4 [${DEFAULT-VALUE}].")
    String bnb4bitQuantType;

    @Option(
            names = "--bnb_4bit_compute_dtype",
            defaultValue = "float16",
            description =
                    "The type the dequantized base weights compute in: float32, bfloat16 or"
                            + " float16 [${DEFAULT-VALUE}].")
    String bnb4bitComputeDtype;

    @Option(
            names = "--bnb_4bit_quant_storage_dtype",
            defaultValue = "uint8",
            description =
                    "The type bitsandbytes labels the packed bytes with, so that PyTorch's"
                            + " FSDP can flatten them beside float parameters; the bytes are the"
                            + " same whatever the label [${DEFAULT-VALUE}].")
    String bnb4bitQuantStorageDtype;

    /**
     * Returns the 4-bit base the flags ask for, or null when they ask for none.
     *
     * @return the configuration, or null
     * @throws IllegalArgumentException naming the flag that cannot be honoured
     */
    public QuantizationConfig resolve() {
        if (use8bitQuantization) {
            throw new IllegalArgumentException(
                    "--use_8bit_quantization True: 8-bit (LLM.int8) weights are not supported;"
                            + " use --use_4bit_quantization True for a 4-bit base, or drop the"
                            + " flag");
        }
        if (!use4bitQuantization) {
            return null;
        }
        return QuantizationConfig.builder()
                .setQuantType(
                        QuantizationConfig.quantType(bnb4bitQuantType, "--bnb_4bit_quant_type"))
                .optComputeType(
                        QuantizationConfig.computeType(
                                bnb4bitComputeDtype, "--bnb_4bit_compute_dtype"))
                .optStorageType(
                        QuantizationConfig.storageType(
                                bnb4bitQuantStorageDtype, "--bnb_4bit_quant_storage_dtype"))
                .optNested(useNestedQuant)
                .build();
    }
}
