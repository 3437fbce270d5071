package ai.djl.fsdp.zoo.hf;

import ai.djl.fsdp.safetensors.SafetensorsCheckpoint;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.io.IOException;
import java.util.Random;
import org.apache.commons.math3.linear.Array2DRowRealMatrix;
import org.apache.commons.math3.linear.CholeskyDecomposition;
import org.apache.commons.math3.linear.NonPositiveDefiniteMatrixException;

/**
 * The rows one stored vocabulary matrix (a token embedding, an untied head) gains as it grows
 * ({@link VocabularyResize}), made the first time a rank reads them and kept, small, in Java:
 * {@code (rows - storedRows) x width} floats. A rank whose shard holds none of them never makes
 * them.
 *
 * <p>Mean resizing follows the math of transformers' {@code
 * _init_added_embeddings_weights_with_mean}: {@code mu} is the stored rows' mean, {@code S = sum (x
 * - mu)(x - mu)^T / n} their covariance, and each new row is {@code mu + L z} with {@code L} the
 * Cholesky factor of {@code 1e-9 S} and {@code z} standard normal (what {@code
 * MultivariateNormal(mu, 1e-9 S).sample()} computes); where {@code 1e-9 S} has no Cholesky factor
 * (not positive definite) every new row is {@code mu}. The statistics are accumulated in float64
 * over the stored rows read a piece at a time (never the whole matrix), two passes (the mean, then
 * the centred products); the factor is taken in Java (commons-math3), and {@code z} comes from
 * {@link Random} seeded with the resize's seed and the parameter's name, so the rows do not depend
 * on the rank, the number of ranks or the device.
 */
final class AddedRows {

    /** The factor transformers scales the covariance by. */
    static final double COVARIANCE_SCALE = 1e-9;

    /** The most stored elements read at once: 16 MiB of float32. */
    private static final long PIECE = 1L << 22;

    private final VocabularyResize resize;
    private final String name;
    private final long width;
    private float[] values;

    /**
     * Describes the rows a matrix gains.
     *
     * @param resize the growth
     * @param name the parameter's name, which seeds its draws
     * @param width the row size
     */
    AddedRows(VocabularyResize resize, String name, long width) {
        this.resize = resize;
        this.name = name;
        this.width = width;
    }

    /** Returns the elements the stored rows hold. */
    long storedElements() {
        return resize.getStoredRows() * width;
    }

    /**
     * Returns elements {@code [from, to)} of the added rows' row-major flattening, making the rows
     * from the stored matrix the first time.
     *
     * @param manager the manager of the result
     * @param checkpoint the checkpoint
     * @param tensor the stored matrix's name
     * @param from the first element, counted from the first added row
     * @param to one past the last
     * @return a 1-D float32 array
     * @throws IOException if the stored matrix cannot be read
     */
    synchronized NDArray read(
            NDManager manager, SafetensorsCheckpoint checkpoint, String tensor, long from, long to)
            throws IOException {
        if (values == null) {
            values = make(manager, checkpoint, tensor);
        }
        float[] part = new float[Math.toIntExact(to - from)];
        System.arraycopy(values, Math.toIntExact(from), part, 0, part.length);
        return manager.create(part);
    }

    private float[] make(NDManager manager, SafetensorsCheckpoint checkpoint, String tensor)
            throws IOException {
        int added = resize.getRows() - resize.getStoredRows();
        int columns = Math.toIntExact(width);
        // String.hashCode is specified, so the stream is the same on every JVM.
        Random random = new Random(resize.getSeed() * 31 + name.hashCode());
        float[] rows = new float[Math.toIntExact(added * width)];
        if (!resize.isMeanResizing()) {
            for (int i = 0; i < rows.length; i++) {
                rows[i] = (float) (resize.getInitializerRange() * random.nextGaussian());
            }
            return rows;
        }
        double[] mean = mean(manager, checkpoint, tensor);
        double[][] factor = choleskyOfScaledCovariance(manager, checkpoint, tensor, mean);
        double[] z = new double[columns];
        for (int row = 0; row < added; row++) {
            for (int j = 0; j < columns; j++) {
                z[j] = random.nextGaussian();
            }
            for (int k = 0; k < columns; k++) {
                double value = mean[k];
                if (factor != null) {
                    for (int j = 0; j <= k; j++) {
                        value += factor[k][j] * z[j];
                    }
                }
                rows[row * columns + k] = (float) value;
            }
        }
        return rows;
    }

    /** The stored rows' mean, summed in float64 a piece at a time. */
    private double[] mean(NDManager manager, SafetensorsCheckpoint checkpoint, String tensor)
            throws IOException {
        double[] sum = new double[Math.toIntExact(width)];
        long rowsPerPiece = Math.max(1, PIECE / width);
        for (long row = 0; row < resize.getStoredRows(); row += rowsPerPiece) {
            long end = Math.min(resize.getStoredRows(), row + rowsPerPiece);
            try (NDManager scope = manager.newSubManager()) {
                double[] part =
                        piece(scope, checkpoint, tensor, row, end)
                                .sum(new int[] {0})
                                .toDoubleArray();
                for (int j = 0; j < sum.length; j++) {
                    sum[j] += part[j];
                }
            }
        }
        for (int j = 0; j < sum.length; j++) {
            sum[j] /= resize.getStoredRows();
        }
        return sum;
    }

    /**
     * The lower Cholesky factor of {@code 1e-9} times the stored rows' covariance, or null where it
     * has none (not positive definite, or not finite).
     */
    private double[][] choleskyOfScaledCovariance(
            NDManager manager, SafetensorsCheckpoint checkpoint, String tensor, double[] mean)
            throws IOException {
        int columns = mean.length;
        double[] products;
        try (NDManager scope = manager.newSubManager()) {
            NDArray sum = scope.zeros(new Shape(columns, columns), DataType.FLOAT64);
            NDArray mu = scope.create(mean).reshape(1, columns);
            long rowsPerPiece = Math.max(1, PIECE / width);
            for (long row = 0; row < resize.getStoredRows(); row += rowsPerPiece) {
                long end = Math.min(resize.getStoredRows(), row + rowsPerPiece);
                try (NDManager pieceScope = scope.newSubManager()) {
                    NDArray centred = piece(pieceScope, checkpoint, tensor, row, end).sub(mu);
                    sum.addi(centred.transpose().matMul(centred));
                }
            }
            products = sum.toDoubleArray();
        }
        double[][] scaled = new double[columns][columns];
        double scale = COVARIANCE_SCALE / resize.getStoredRows();
        for (int i = 0; i < columns; i++) {
            for (int j = 0; j <= i; j++) {
                // The product's two triangles agree up to rounding: take one, exactly symmetric.
                double value = products[i * columns + j] * scale;
                if (!Double.isFinite(value)) {
                    return null;
                }
                scaled[i][j] = value;
                scaled[j][i] = value;
            }
        }
        try {
            // Thresholds 0: a factor exists exactly where every pivot is positive, LAPACK's test.
            return new CholeskyDecomposition(new Array2DRowRealMatrix(scaled, false), 0, 0)
                    .getL()
                    .getData();
        } catch (NonPositiveDefiniteMatrixException e) {
            return null;
        }
    }

    /** Stored rows {@code [from, to)} as a float64 matrix. */
    private NDArray piece(
            NDManager scope, SafetensorsCheckpoint checkpoint, String tensor, long from, long to)
            throws IOException {
        return checkpoint
                .read(scope, tensor, from * width, to * width)
                .toType(DataType.FLOAT64, false)
                .reshape(to - from, width);
    }
}
