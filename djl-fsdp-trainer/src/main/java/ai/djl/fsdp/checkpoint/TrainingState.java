package ai.djl.fsdp.checkpoint;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonParseException;
import com.google.gson.annotations.SerializedName;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Where training stands, as a checkpoint records it: the optimizer steps taken, the epoch, the
 * optimizer's update counts (which drive bias correction and the learning-rate schedule), a float16
 * run's loss scale, and the caller's own state by key (a data sampler's position, say), saved and
 * restored as given.
 */
public final class TrainingState {

    private static final Gson GSON = new GsonBuilder().setPrettyPrinting().create();

    @SerializedName("global_step")
    private long step;

    private long epoch;

    @SerializedName("update_counts")
    private Map<String, Integer> updateCounts = new LinkedHashMap<>();

    private Map<String, String> extras = new LinkedHashMap<>();

    @SerializedName("loss_scale")
    private Float lossScale;

    @SerializedName("loss_scale_good_steps")
    private Integer lossScaleGoodSteps;

    /**
     * Returns the state as the JSON of a checkpoint's {@code trainer_state.json}.
     *
     * @return the JSON text
     */
    public String toJson() {
        return GSON.toJson(this);
    }

    /**
     * Reads a checkpoint's {@code trainer_state.json}.
     *
     * @param file the file
     * @return the state
     * @throws IOException if the file is missing or not a trainer state
     */
    public static TrainingState read(Path file) throws IOException {
        try {
            TrainingState state = GSON.fromJson(Files.readString(file), TrainingState.class);
            if (state == null || state.updateCounts == null || state.extras == null) {
                throw new IOException(file + " is not a trainer state");
            }
            return state;
        } catch (NoSuchFileException e) {
            throw new IOException(file + " is missing: the checkpoint is incomplete", e);
        } catch (JsonParseException e) {
            throw new IOException(file + " is not valid JSON (truncated or corrupt)", e);
        }
    }

    /** Returns how many optimizer steps were taken. */
    public long getStep() {
        return step;
    }

    /**
     * Sets how many optimizer steps were taken.
     *
     * @param step the step count
     */
    public void setStep(long step) {
        this.step = step;
    }

    /**
     * Returns the epochs ended: an FSDP trainer counts each {@code onEpoch} event once (as {@code
     * EasyTrain.fit} raises one per epoch); a caller may set it instead.
     */
    public long getEpoch() {
        return epoch;
    }

    /**
     * Sets the epoch training is in.
     *
     * @param epoch the epoch, from 0
     */
    public void setEpoch(long epoch) {
        this.epoch = epoch;
    }

    /** Returns the optimizer's update counts by flat parameter name, the largest under "". */
    public Map<String, Integer> getUpdateCounts() {
        return updateCounts;
    }

    /**
     * Sets the optimizer's update counts.
     *
     * @param updateCounts the counts by flat parameter name, the largest under ""
     */
    public void setUpdateCounts(Map<String, Integer> updateCounts) {
        this.updateCounts = new LinkedHashMap<>(updateCounts);
    }

    /**
     * Returns the loss scale of a float16 run, or null for a run without loss scaling (and
     * checkpoints written before it was saved).
     */
    public Float getLossScale() {
        return lossScale;
    }

    /** Returns the optimizer steps in a row with finite gradients since the scale last changed. */
    public int getLossScaleGoodSteps() {
        return lossScaleGoodSteps == null ? 0 : lossScaleGoodSteps;
    }

    /**
     * Sets the loss scaler's state.
     *
     * @param scale the scale, null for a run without loss scaling
     * @param goodSteps the good steps in a row since the scale last changed
     */
    public void setLossScale(Float scale, int goodSteps) {
        this.lossScale = scale;
        this.lossScaleGoodSteps = scale == null ? null : goodSteps;
    }

    /** Returns the caller's own state by key; changes are saved with the next checkpoint. */
    public Map<String, String> getExtras() {
        return extras;
    }
}
