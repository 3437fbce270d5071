package ai.djl.fsdp.zoo.finetune.report;

import ai.djl.fsdp.safetensors.AtomicFiles;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * {@code training_curves.png}: the training and eval loss against the step (left axis) and the
 * learning rate (right axis), drawn from {@code metrics.jsonl}'s rows with XChart.
 */
public final class CurvePlot {

    /** The file name in the output directory. */
    public static final String FILE = "training_curves.png";

    private CurvePlot() {}

    /**
     * Returns whether this Java runtime can draw: XChart needs the {@code java.desktop} module,
     * which a trimmed runtime (jlink, the GPU kit's) may leave out.
     *
     * @return true when {@code java.desktop} is present
     */
    public static boolean isAvailable() {
        return ModuleLayer.boot().findModule("java.desktop").isPresent();
    }

    /**
     * Draws the curves.
     *
     * @param rows the metrics rows
     * @param file the PNG to write (through a temporary name)
     * @throws IOException if writing fails
     */
    public static void write(List<JsonObject> rows, Path file) throws IOException {
        System.setProperty("java.awt.headless", "true");
        XYChart chart =
                new XYChartBuilder()
                        .width(900)
                        .height(500)
                        .title("Training curves")
                        .xAxisTitle("optimizer step")
                        .yAxisTitle("loss")
                        .build();
        chart.setYAxisGroupTitle(1, "learning rate");
        chart.getStyler().setYAxisGroupPosition(1, Styler.YAxisPosition.Right);
        addSeries(chart, rows, "loss", "train loss", 0, false);
        addSeries(chart, rows, "eval_loss", "eval loss", 0, true);
        XYSeries rate = addSeries(chart, rows, "learning_rate", "learning rate", 1, false);
        if (rate != null) {
            rate.setLineStyle(org.knowm.xchart.style.lines.SeriesLines.DASH_DASH);
        }
        AtomicFiles.writeBytes(
                file, BitmapEncoder.getBitmapBytes(chart, BitmapEncoder.BitmapFormat.PNG));
    }

    private static XYSeries addSeries(
            XYChart chart,
            List<JsonObject> rows,
            String key,
            String name,
            int axis,
            boolean markers) {
        List<Double> steps = new ArrayList<>();
        List<Double> values = new ArrayList<>();
        for (JsonObject row : rows) {
            if (row.has(key)) {
                steps.add(row.get("step").getAsDouble());
                values.add(row.get(key).getAsDouble());
            }
        }
        if (steps.isEmpty()) {
            return null;
        }
        XYSeries series = chart.addSeries(name, steps, values);
        series.setYAxisGroup(axis);
        series.setMarker(markers ? SeriesMarkers.CIRCLE : SeriesMarkers.NONE);
        return series;
    }
}
