package ai.djl.fsdp.optim;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import java.util.List;

/**
 * One rank of {@link LossScalerTest#everyRankSkipsWhenOneRankOverflows}: the last rank alone holds
 * an infinite gradient, yet every rank's scaler reports the overflow and backs off; then no rank
 * overflows and none reports one.
 */
public final class LossScalerRankMain {

    private LossScalerRankMain() {}

    /**
     * Runs the check on one rank of a job described by the environment.
     *
     * @param args none
     */
    public static void main(String[] args) {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment());
                NDManager manager = NDManager.newBaseManager()) {
            LossScaler scaler = new LossScaler(LossScaler.Settings.DEFAULTS, group);
            boolean last = group.getRank() == group.getSize() - 1;
            NDArray gradient =
                    manager.create(new float[] {1f, last ? Float.POSITIVE_INFINITY : 2f});
            if (!scaler.unscale(List.of(gradient)) || !scaler.update(true)) {
                throw new AssertionError("rank " + group.getRank() + " did not see the overflow");
            }
            if (scaler.getScale() != 32768f) {
                throw new AssertionError("scale " + scaler.getScale() + ", expected 32768");
            }
            NDArray finite = manager.create(new float[] {1f, 2f});
            if (scaler.unscale(List.of(finite))) {
                throw new AssertionError("rank " + group.getRank() + " saw an overflow in none");
            }
            System.out.println("rank " + group.getRank() + " agreed: scale " + scaler.getScale());
        }
    }
}
