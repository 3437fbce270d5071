package ai.djl.fsdp.internal.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.Device;
import ai.djl.fsdp.internal.config.CollectiveQuantizers;
import ai.djl.fsdp.internal.config.ExecutionOptions;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.LambdaBlock;
import ai.djl.training.ParameterStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Forward prefetch over a chain of units where one is called twice a pass, as T5's token table is
 * called by the encoder and by the decoder: which units are gathered (or on their way) while each
 * call computes, over a recording two-rank group.
 */
class ShardedPassesTest {

    /** The units in model order: the table, two encoder blocks, two decoder blocks. */
    private static final List<String> UNITS = List.of("shared", "enc0", "enc1", "dec0", "dec1");

    /** An encoder-decoder pass: the table is called again before the decoder. */
    private static final List<String> FULL_PASS =
            List.of("shared", "enc0", "enc1", "shared", "dec0", "dec1");

    /** A generation step: the encoder's output is kept, only the decoder runs. */
    private static final List<String> DECODER_PASS = List.of("shared", "dec0", "dec1");

    @Test
    void aUnitCalledTwiceNeitherShiftsNorDoublesThePrefetch() {
        try (Chain chain = new Chain()) {
            // No pass observed yet: the unit after each in model order, none on a repeated call.
            assertEquals(
                    List.of(
                            "shared [enc0, shared]",
                            "enc0 [enc0, enc1]",
                            "enc1 [dec0, enc1]",
                            "shared [dec0, shared]",
                            "dec0 [dec0, dec1]",
                            "dec1 [dec1]"),
                    chain.pass(FULL_PASS));
            assertEquals(2 * chain.unitBytes(), chain.passes.getPeakGatheredBytes());

            // The inference pass taught the order: the table's second call is prefetched too.
            assertEquals(
                    List.of(
                            "shared [enc0, shared]",
                            "enc0 [enc0, enc1]",
                            "enc1 [enc1, shared]",
                            "shared [dec0, shared]",
                            "dec0 [dec0, dec1]",
                            "dec1 [dec1]"),
                    chain.pass(FULL_PASS));
            assertEquals(2 * chain.unitBytes(), chain.passes.getPeakGatheredBytes());
        }
    }

    @Test
    void aPassThatLeavesTheLearnedOrderUndoesTheGatherItStartedAhead() {
        try (Chain chain = new Chain()) {
            chain.pass(FULL_PASS);
            // The learned order gathers enc0 ahead of the second call, which is dec0's: enc0 is
            // resharded there, and dec1 follows dec0 in model order.
            assertEquals(
                    List.of("shared [enc0, shared]", "dec0 [dec0, dec1]", "dec1 [dec1]"),
                    chain.pass(DECODER_PASS));
            // The generation step's own order from then on.
            assertEquals(
                    List.of("shared [dec0, shared]", "dec0 [dec0, dec1]", "dec1 [dec1]"),
                    chain.pass(DECODER_PASS));
            assertEquals(2 * chain.unitBytes(), chain.passes.getPeakGatheredBytes());
        }
    }

    /**
     * The units of {@link #UNITS} (each one frozen 4x4 parameter, recomputed, resharded after
     * forward, prefetch on) under a root holding nothing; each unit's block notes, when it runs,
     * which units are not resharded.
     */
    private static final class Chain implements AutoCloseable {

        final NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch");
        final Map<String, UnitLifecycle> byName = new TreeMap<>();
        final List<FsdpUnit> units = new ArrayList<>();
        final List<String> log = new ArrayList<>();
        final ShardedPasses passes;

        Chain() {
            units.add(new FsdpUnit(0, "root", null, List.of(), List.of(), List.of(), false));
            for (String name : UNITS) {
                LambdaBlock block =
                        new LambdaBlock(
                                inputs -> {
                                    log.add(name + " " + notResharded());
                                    return inputs;
                                });
                units.add(
                        new FsdpUnit(
                                units.size(),
                                name,
                                block,
                                List.of(),
                                List.of(CollectivesTest.flat(manager, name + ".w", false)),
                                List.of(),
                                true));
            }
            ExecutionOptions options =
                    new ExecutionOptions(
                            true,
                            true,
                            Precision.FLOAT32,
                            Precision.FLOAT32,
                            CollectiveQuantizers.NONE);
            passes =
                    new ShardedPasses(
                            new Collectives(new RecordingGroup()),
                            options,
                            units,
                            new ModelBuffers(units, Precision.FLOAT32));
            passes.getUnits().forEach(unit -> byName.put(unit.unit().getName(), unit));
        }

        /** The gathered bytes of one unit: its 16 float32 elements. */
        long unitBytes() {
            return 16 * 4;
        }

        /** Runs an inference pass calling {@code order}; returns what each call saw. */
        List<String> pass(List<String> order) {
            log.clear();
            try (NDManager data = manager.newSubManager()) {
                passes.beginForward(false, data);
                ParameterStore store = new ParameterStore(data, false);
                NDList inputs = new NDList(data.ones(new Shape(2)));
                for (String name : order) {
                    inputs = passes.call(byName.get(name), store, inputs, false, null);
                }
                passes.endForward();
                passes.endInference();
            }
            return List.copyOf(log);
        }

        private List<String> notResharded() {
            return units.stream()
                    .filter(unit -> !unit.isRoot() && unit.getState() != UnitState.RESHARDED)
                    .map(FsdpUnit::getName)
                    .sorted()
                    .toList();
        }

        @Override
        public void close() {
            units.forEach(FsdpUnit::close);
            manager.close();
        }
    }
}
