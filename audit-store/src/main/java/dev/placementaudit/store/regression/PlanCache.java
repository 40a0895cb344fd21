package dev.placementaudit.store.regression;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The placements of the plans read most recently, by digest. A plan is content-addressed, so what its digest names
 * never changes: a fleet that loads a few models compares and chains the same few plans over and over, and reads
 * each once. Bounded (least recently used goes first), and safe to share between threads.
 */
public final class PlanCache {
    private final Map<String, List<TensorPlacement>> placements;

    public PlanCache(int plans) {
        this.placements = lru(plans);
    }

    /** A load's placements: from its plan, read at most once while it stays among the recent ones. */
    public List<TensorPlacement> placements(Connection c, LoadRef load) throws SQLException {
        if (load.planDigest() == null) {
            return List.of();
        }
        return placements(c, load.planDigest());
    }

    public List<TensorPlacement> placements(Connection c, String planDigest) throws SQLException {
        List<TensorPlacement> known = placements.get(planDigest);
        if (known != null) {
            return known;
        }
        List<TensorPlacement> read = List.copyOf(RegressionDetector.plan(c, planDigest));
        if (!read.isEmpty()) {
            placements.put(planDigest, read);
        }
        return read;
    }

    /** Remembers a plan's placements just built (its rows may not be committed yet; they are the same). */
    public void put(String planDigest, List<TensorPlacement> plan) {
        placements.put(planDigest, List.copyOf(plan));
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
