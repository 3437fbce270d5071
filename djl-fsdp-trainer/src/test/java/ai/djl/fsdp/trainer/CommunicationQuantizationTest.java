package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.tensor.quant.QuantizedBits;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The setting's builder, its text form both ways, and the combinations it refuses. */
class CommunicationQuantizationTest {

    @Test
    void theTextFormReadsWhatTheBuilderBuilds() {
        CommunicationQuantization built =
                CommunicationQuantization.builder()
                        .optWeights(QuantizedBits.INT8)
                        .optGradients(QuantizedBits.INT4)
                        .optBlockSize(128)
                        .build();
        CommunicationQuantization parsed =
                CommunicationQuantization.parse(" Weights=INT8, gradients=int4 ,block=128");
        assertEquals(built, parsed);
        assertEquals("weights=int8,gradients=int4,block=128", parsed.toString());
        assertEquals(parsed, CommunicationQuantization.parse(parsed.toString()));
        assertEquals(Optional.of(QuantizedBits.INT8), parsed.getWeights());
        assertEquals(128, parsed.weightQuantizer().orElseThrow().getBlockSize());
        assertEquals(QuantizedBits.INT4, parsed.gradientQuantizer().orElseThrow().getBits());
    }

    @Test
    void noneAndLeftOutPartsQuantizeNothing() {
        assertEquals(CommunicationQuantization.NONE, CommunicationQuantization.parse("none"));
        assertEquals(CommunicationQuantization.NONE, CommunicationQuantization.parse(""));
        assertFalse(CommunicationQuantization.NONE.isEnabled());
        assertEquals("none", CommunicationQuantization.NONE.toString());
        CommunicationQuantization weights = CommunicationQuantization.parse("weights=int8");
        assertTrue(weights.isEnabled());
        assertEquals(Optional.empty(), weights.getGradients());
        assertEquals(CommunicationQuantization.DEFAULT_BLOCK_SIZE, weights.getBlockSize());
        assertEquals(
                CommunicationQuantization.NONE,
                CommunicationQuantization.parse("weights=none,gradients=none"));
        assertEquals(
                CommunicationQuantization.NONE,
                FsdpConfig.builder()
                        .optWrapPolicy(WrapPolicy.byLayerClass("GPT2Block"))
                        .build()
                        .getCommunicationQuantization(),
                "off by default");
    }

    @Test
    void mistakesAreRefusedNamingThePartAndTheChoices() {
        assertMessage("weights=int4", "int4 is for gradients: use weights=int8");
        assertMessage("gradients=int2", "Unknown quantized width 'int2': use int8 or int4");
        assertMessage("block=32", "from 64 to 2048");
        assertMessage("block=big", "block must be a number of values, got 'big'");
        assertMessage("weight=int8", "unknown part 'weight=int8'");
        assertMessage("weight=int8", "scope=all|inter-node");
    }

    @Test
    void theInterNodeScopeReadsBackAndAloneQuantizesTheReplicaAverage() {
        CommunicationQuantization parsed =
                CommunicationQuantization.parse("gradients=int4,scope=inter-node");
        assertEquals(
                CommunicationQuantization.builder()
                        .optGradients(QuantizedBits.INT4)
                        .optScope(CommunicationQuantization.Scope.INTER_NODE)
                        .build(),
                parsed);
        assertEquals("weights=none,gradients=int4,block=64,scope=inter-node", parsed.toString());
        assertEquals(parsed, CommunicationQuantization.parse(parsed.toString()));
        assertEquals(Optional.empty(), parsed.gradientQuantizer(), "nothing inside a node");
        assertEquals(QuantizedBits.INT4, parsed.replicaQuantizer().orElseThrow().getBits());
        CommunicationQuantization all = CommunicationQuantization.parse("gradients=int8");
        assertEquals(CommunicationQuantization.Scope.ALL, all.getScope(), "the default");
        assertEquals(Optional.empty(), all.replicaQuantizer());
        assertMessage("scope=node", "Unknown communication quantization scope 'node'");
    }

    @Test
    void errorFeedbackReadsBackAndNeedsQuantizedGradientsInTheShardGroups() {
        CommunicationQuantization parsed =
                CommunicationQuantization.parse("gradients=int4,error-feedback=on");
        assertTrue(parsed.isErrorFeedback());
        assertTrue(parsed.quantizers().errorFeedback());
        assertEquals("weights=none,gradients=int4,block=64,error-feedback=on", parsed.toString());
        assertEquals(parsed, CommunicationQuantization.parse(parsed.toString()));
        assertFalse(CommunicationQuantization.parse("gradients=int4").isErrorFeedback());
        assertMessage("weights=int8,error-feedback=on", "give gradients=int8 or int4");
        assertMessage("gradients=int8,scope=inter-node,error-feedback=on", "with scope=all");
        assertMessage("gradients=int8,error-feedback=yes", "error-feedback is on or off");
    }

    @Test
    void scopesThatDoNotFitTheStrategyAreRefused() {
        assertRefused(
                ShardingStrategy.FULL_SHARD,
                "gradients=int8,scope=inter-node",
                "use HYBRID_SHARD or HYBRID_SHARD_ZERO2, or scope=all");
        assertRefused(
                ShardingStrategy.HYBRID_SHARD,
                "weights=int8,gradients=int8,scope=inter-node",
                "give gradients=int8 or int4 and weights=none");
        assertRefused(
                ShardingStrategy.HYBRID_SHARD,
                "gradients=int8",
                "add scope=inter-node (the replicate groups' average)");
    }

    private static void assertRefused(ShardingStrategy strategy, String setting, String expected) {
        FsdpConfig fsdp =
                FsdpConfig.builder()
                        .optShardingStrategy(strategy)
                        .optWrapPolicy(WrapPolicy.byLayerClass("GPT2Block"))
                        .optCommunicationQuantization(CommunicationQuantization.parse(setting))
                        .build();
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                TrainingSetup.resolve(
                                        fsdp,
                                        TrainerOptions.builder().build(),
                                        null,
                                        null,
                                        Map.of()));
        assertTrue(e.getMessage().contains(expected), e::getMessage);
    }

    @Test
    void withoutShardingThereIsNothingToQuantize() {
        assertRefused(ShardingStrategy.NO_SHARD, "weights=int8", "NO_SHARD has neither");
    }

    private static void assertMessage(String text, String expected) {
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> CommunicationQuantization.parse(text));
        assertTrue(e.getMessage().contains(expected), e::getMessage);
    }
}
