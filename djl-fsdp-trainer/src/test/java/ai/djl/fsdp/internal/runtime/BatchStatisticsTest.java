package ai.djl.fsdp.internal.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.norm.BatchNorm;
import ai.djl.training.GradientCollector;
import org.junit.jupiter.api.Test;

/**
 * The synchronized BatchNorm's arithmetic on a batch split into two simulated ranks' slices,
 * against DJL's BatchNorm (libtorch's kernel) and its autograd on the whole batch: the output, the
 * running statistics and the input's gradient.
 */
class BatchStatisticsTest {

    private static final float MOMENTUM = 0.9f;

    /** Large enough that a wrong use of it shows. */
    private static final float EPSILON = 0.1f;

    /** Float32 summation order over a few hundred terms of order 1, with room. */
    private static final double TOLERANCE = 1e-5;

    @Test
    void imagesSplitInTwoEqualTheWholeBatch() {
        check(new Shape(8, 3, 5, 5), 1, 3);
    }

    @Test
    void unevenSlicesOfFeaturesOnTheLastAxis() {
        check(new Shape(7, 6), 1, 4);
    }

    private static void check(Shape shape, int axis, long firstSlice) {
        try (NDManager manager = NDManager.newBaseManager(Device.cpu())) {
            Engine.getInstance().setRandomSeed(7);
            long channels = shape.get(axis);
            // Inputs far from zero: a mean of 3 and spread 2 per channel, where sums of squares
            // would cancel.
            NDArray x = manager.randomNormal(shape).mul(2).add(3);
            NDArray upstream = manager.randomNormal(shape);
            NDArray gamma = manager.randomUniform(0.5f, 1.5f, new Shape(channels));
            NDArray beta = manager.randomNormal(new Shape(channels));
            NDArray runningMean = manager.randomNormal(new Shape(channels));
            NDArray runningVar = manager.randomUniform(0.5f, 2f, new Shape(channels));

            // DJL's BatchNorm on the whole batch, and autograd.
            NDArray plainMean = runningMean.duplicate();
            NDArray plainVar = runningVar.duplicate();
            NDArray expectedOutput;
            NDArray expectedGradient;
            try (GradientCollector collector = Engine.getInstance().newGradientCollector()) {
                NDArray leaf = x.duplicate();
                leaf.setRequiresGradient(true);
                expectedOutput =
                        BatchNorm.batchNorm(
                                        leaf, plainMean, plainVar, gamma, beta, axis, MOMENTUM,
                                        EPSILON, true)
                                .head();
                collector.backward(expectedOutput.mul(upstream).sum());
                expectedGradient = leaf.getGradient().duplicate();
            }

            // Two slices, each rank's arithmetic, the collectives done by hand.
            NDArray[] slices = {
                x.get(new NDIndex("0:{}", firstSlice)), x.get(new NDIndex("{}:", firstSlice))
            };
            NDArray[] upstreams = {
                upstream.get(new NDIndex("0:{}", firstSlice)),
                upstream.get(new NDIndex("{}:", firstSlice))
            };
            NDArray gathered =
                    NDArrays.concat(
                            new NDList(
                                    BatchStatistics.localMoments(slices[0], axis),
                                    BatchStatistics.localMoments(slices[1], axis)));
            Shape channelShape = BatchStatistics.channelShape(shape, axis);
            NDArray[] normalized = new NDArray[2];
            NDArray[] dxhat = new NDArray[2];
            NDArray sums = null;
            NDArray[] outputs = new NDArray[2];
            BatchStatistics[] statistics = new BatchStatistics[2];
            for (int r = 0; r < 2; r++) {
                statistics[r] = BatchStatistics.combine(gathered, slices[r], axis);
                NDArray inverseStd = statistics[r].inverseStd(EPSILON);
                normalized[r] = slices[r].sub(statistics[r].mean()).mul(inverseStd);
                outputs[r] =
                        normalized[r]
                                .mul(gamma.reshape(channelShape))
                                .add(beta.reshape(channelShape));
                dxhat[r] = upstreams[r].mul(gamma.reshape(channelShape));
                NDArray own = BatchStatistics.gradientSums(dxhat[r], normalized[r], axis);
                sums = sums == null ? own : sums.add(own);
            }
            NDArray[] gradients = new NDArray[2];
            for (int r = 0; r < 2; r++) {
                gradients[r] =
                        BatchStatistics.inputGradient(
                                dxhat[r],
                                normalized[r],
                                statistics[r].inverseStd(EPSILON),
                                sums,
                                shape.size() / channels,
                                axis);
            }
            assertEquals(shape.size() / channels, statistics[0].count());
            assertClose(expectedOutput, NDArrays.concat(new NDList(outputs)), "output");
            assertClose(expectedGradient, NDArrays.concat(new NDList(gradients)), "gradient");

            NDArray syncMean = runningMean.duplicate();
            NDArray syncVar = runningVar.duplicate();
            syncMean.muli(MOMENTUM).addi(statistics[0].mean().reshape(channels).mul(1 - MOMENTUM));
            syncVar.muli(MOMENTUM)
                    .addi(statistics[0].unbiasedVariance().reshape(channels).mul(1 - MOMENTUM));
            assertClose(plainMean, syncMean, "running mean");
            assertClose(plainVar, syncVar, "running variance");
        }
    }

    private static void assertClose(NDArray expected, NDArray actual, String what) {
        float[] e = expected.toFloatArray();
        float[] a = actual.toFloatArray();
        assertEquals(e.length, a.length, what);
        double scale = 0;
        double error = 0;
        for (int i = 0; i < e.length; i++) {
            scale = Math.max(scale, Math.abs(e[i]));
            error = Math.max(error, Math.abs(e[i] - a[i]));
        }
        System.out.printf(
                "%s: largest difference %.3g of largest value %.3g%n", what, error, scale);
        assertTrue(scale > 0.1, what + " is not trivially zero");
        assertTrue(error <= TOLERANCE * scale, what + " differs by " + error + " of " + scale);
    }
}
