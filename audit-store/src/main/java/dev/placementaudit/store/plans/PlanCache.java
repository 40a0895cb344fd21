package dev.placementaudit.store.plans;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The plans read most recently, by digest, in the two shapes the store uses them in: where each tensor lands (to
 * compare and chain loads) and each tensor's values as {@link dev.placementaudit.schemas.PlanDigest#values} (to check a
 * decision against its plan). A plan is content-addressed, so what its digest names never changes: a fleet that loads a
 * few models matches, compares and chains the same few plans over and over, and reads each once. Bounded (least
 * recently used goes first), and safe to share between threads: the writer's decoding thread and its batch thread
 * share one.
 */
public final class PlanCache {
    private final Map<String, List<TensorPlacement>> placements;
    private final Map<String, List<Object[]>> values;

    public PlanCache(int plans) {
        this.placements = lru(plans);
        this.values = lru(plans);
    }

    /** A plan's placements, read at most once while it stays among the recent ones; none for no plan. */
    public List<TensorPlacement> placements(Connection c, String planDigest) throws SQLException {
        if (planDigest == null) {
            return List.of();
        }
        List<TensorPlacement> known = placements.get(planDigest);
        if (known != null) {
            return known;
        }
        List<TensorPlacement> read = List.copyOf(StoredPlans.placements(c, planDigest));
        if (!read.isEmpty()) {
            placements.put(planDigest, read);
        }
        return read;
    }

    /** A plan's tensor values, read at most once while it stays among the recent ones. */
    public List<Object[]> values(Connection c, String planDigest) throws SQLException {
        List<Object[]> known = values.get(planDigest);
        if (known == null) {
            known = StoredPlans.tensorValues(c, planDigest);
            values.put(planDigest, known);
        }
        return known;
    }

    /** A plan's values if they are at hand, without reading anything: null otherwise. */
    public List<Object[]> valuesAtHand(String planDigest) {
        return values.get(planDigest);
    }

    /** Remembers a plan just built, in both shapes (its rows may not be committed yet; they are the same). */
    public void put(StoredPlans.NewPlan plan) {
        placements.put(plan.digest(), List.copyOf(plan.placements()));
        values.put(plan.digest(), plan.values());
    }

    /** A synchronized map that keeps the {@code capacity} entries used last. */
    public static <V> Map<String, V> lru(int capacity) {
        return Collections.synchronizedMap(new LinkedHashMap<>(capacity * 2, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, V> eldest) {
                return size() > capacity;
            }
        });
    }
}
