package dev.placementaudit.store;

import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.TestDatabase;
import dev.placementaudit.resolution.ResolvedLoad;

import java.sql.SQLException;
import java.util.List;
import java.util.Map;

/** {@link StoreHarness} for tests in the store's sub-packages. */
public final class StoreHarnessAccess {
    private final StoreHarness harness;

    public StoreHarnessAccess(KafkaBroker broker, TestDatabase db) {
        this.harness = new StoreHarness(broker, db);
    }

    public static ModelLoaded load(String deployment, String release, int q4k, int hours, boolean dequantized) {
        return StoreHarness.load(deployment, release, q4k, hours, dequantized);
    }

    public List<ResolvedLoad> publish(List<ModelLoaded> loads) throws Exception {
        return harness.publish(loads);
    }

    /** What a runtime that held the load as planned, plus {@code extraOffHeap} bytes off-heap, observed: published. */
    public void publishObservation(ResolvedLoad load, long extraOffHeap) throws Exception {
        harness.publishObservation(StoreHarness.observation(load.summary(), extraOffHeap, true));
    }

    public Map<String, String> settings() {
        return harness.settings();
    }

    public AuditStore start(Map<String, String> settings) {
        return harness.start(settings);
    }

    public long count(String sql) throws SQLException {
        return harness.count(sql);
    }
}
