package dev.placementaudit.store.regression;

import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.store.db.Sql;
import dev.placementaudit.store.plans.PlanCache;
import dev.placementaudit.store.plans.TensorPlacement;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * When a load completes: find the latest completed load of the previous release (same deployment and model, a
 * different release, earlier in the log), diff them, and record the findings - inside the ingesting transaction.
 */
public final class RegressionDetector {
    /** The kinds of finding that count as a regression where the fleet is shown (SQL literals). */
    public static final String REGRESSION_KINDS = "'LOST_MAPPING', 'OFFHEAP_GROWTH', 'HEAP_GROWTH'";

    private static final List<String> FINDING_COLUMNS = List.of("from_plan", "to_plan", "seq", "kind", "tensor_name", "before_domain",
            "after_domain", "before_bytes", "after_bytes", "before_format", "after_format", "before_reason", "after_reason");
    private static final List<String> FINDING_TYPES = List.of("VARCHAR(64)", "VARCHAR(64)", "INTEGER", "VARCHAR(30)", "VARCHAR(1000)",
            "VARCHAR(20)", "VARCHAR(20)", "BIGINT", "BIGINT", "VARCHAR(150)", "VARCHAR(150)", "VARCHAR(4000)", "VARCHAR(4000)");

    private final Dialect dialect;
    private final GrowthRule offHeap;
    private final GrowthRule heap;
    private final String insertFinding;
    /** Placements by plan, and comparisons by pair of plans: plans never change, so what was read once holds. */
    private final PlanCache plans = new PlanCache(64);
    private final Map<String, PlanComparison> comparisons = PlanCache.lru(256);

    public RegressionDetector(Dialect dialect, GrowthRule offHeap, GrowthRule heap) {
        this.dialect = dialect;
        this.offHeap = offHeap;
        this.heap = heap;
        this.insertFinding = dialect.insertIgnoringDuplicates("plan_findings", FINDING_COLUMNS, FINDING_TYPES,
                List.of("from_plan", "to_plan", "seq"));
    }

    /**
     * A load against the predecessor the caller found for it; nothing is written. The two plans' placements are read
     * only when the pair's comparison is not at hand (a load of the plan before it compares with nothing).
     */
    public Detection compare(Connection c, LoadRef previous, LoadRef load) throws SQLException {
        PlanComparison comparison = comparison(c, previous, load);
        return new Detection(load, previous, comparison.findings(), comparison.causes());
    }

    /**
     * Stores the findings of every pair of plans these detections compare that has none stored yet: once per pair,
     * however many loads make that change (the {@code findings} view shows them per load).
     */
    public void storeFindings(Connection c, Collection<Detection> detections) throws SQLException {
        Map<String, Detection> pairs = new LinkedHashMap<>();
        for (Detection d : detections) {
            if (!d.findings().isEmpty() && d.previous().planDigest() != null && d.load().planDigest() != null) {
                pairs.putIfAbsent(d.previous().planDigest() + ">" + d.load().planDigest(), d);
            }
        }
        List<Detection> missing = new ArrayList<>();
        for (Detection d : pairs.values()) {
            if (!pairStored(c, d.previous().planDigest(), d.load().planDigest())) {
                missing.add(d);
            }
        }
        if (missing.isEmpty()) {
            return;
        }
        try (PreparedStatement insert = c.prepareStatement(insertFinding)) {
            for (Detection d : missing) {
                List<Finding> findings = d.findings();
                for (int i = 0; i < findings.size(); i++) {
                    Finding f = findings.get(i);
                    Object[] values = {d.previous().planDigest(), d.load().planDigest(), i, f.kind().name(), f.tensorName(), f.beforeDomain(),
                            f.afterDomain(), f.beforeBytes(), f.afterBytes(), f.beforeFormat(), f.afterFormat(), truncate(f.beforeReason()),
                            truncate(f.afterReason())};
                    for (int v = 0; v < values.length; v++) {
                        insert.setObject(v + 1, values[v]);
                    }
                    insert.addBatch();
                }
            }
            insert.executeBatch();
        }
    }

    /**
     * The two loads' plans compared: nothing when they are one plan (no read at all), else the diff of the two plans,
     * remembered by the pair (a fleet repeats the same few pairs).
     */
    private PlanComparison comparison(Connection c, LoadRef before, LoadRef after) throws SQLException {
        if (before.planDigest() != null && before.planDigest().equals(after.planDigest())) {
            return PlanComparison.SAME;
        }
        String pair = before.planDigest() + ">" + after.planDigest();
        PlanComparison known = before.planDigest() == null || after.planDigest() == null ? null : comparisons.get(pair);
        if (known != null) {
            return known;
        }
        List<TensorPlacement> beforePlacements = plans.placements(c, before.planDigest());
        List<TensorPlacement> afterPlacements = plans.placements(c, after.planDigest());
        PlanComparison comparison = new PlanComparison(ReleaseDiff.compare(beforePlacements, afterPlacements, offHeap, heap),
                RootCauses.of(beforePlacements, afterPlacements));
        if (before.planDigest() != null && after.planDigest() != null) {
            comparisons.put(pair, comparison);
        }
        return comparison;
    }

    /** What the placements of two plans differ by. */
    private record PlanComparison(List<Finding> findings, List<RootCauses.CauseGroup> causes) {
        static final PlanComparison SAME = new PlanComparison(List.of(), List.of());
    }

    private static boolean pairStored(Connection c, String from, String to) throws SQLException {
        return Sql.first(c, "SELECT 1 FROM plan_findings WHERE from_plan = ? AND to_plan = ? AND seq = 0", rs -> true, from, to).isPresent();
    }

    /** The plans this detector has read or been given, by digest. */
    public PlanCache plans() {
        return plans;
    }

    /**
     * A load's predecessor: the latest load complete now, in log order, of its deployment and model and another
     * release, before it in the log. What the events say of their times orders nothing: a load reported late is the
     * latest of its deployment's history when it arrives (docs/adr/0006).
     */
    public static Optional<LoadRef> previous(Connection c, LoadRef load) throws SQLException {
        return one(c, PREVIOUS.formatted("?", "?", "?", "?", "?"), load);
    }

    /** {@link #previous} of each of these loads, by load id (none for a load that has none): one statement on PostgreSQL. */
    public Map<String, LoadRef> previous(Connection c, Collection<LoadRef> loads) throws SQLException {
        return neighbours(c, loads);
    }

    /**
     * The latest complete load before a load in the log, of its deployment and model and another release, with the
     * load's deployment, model, release, summary partition and offset as SQL expressions (parameters, or a lateral
     * row's columns); read backwards along the history index.
     */
    private static final String PREVIOUS = "SELECT l." + LoadRef.COLUMNS.replace(", ", ", l.") + " FROM loads l WHERE l.deployment_id = %s "
            + "AND l.model_id = %s AND l.complete = TRUE AND l.release_name <> %s AND (l.summary_partition, l.summary_offset) < (%s, %s) "
            + "ORDER BY l.summary_partition DESC, l.summary_offset DESC, l.load_id DESC FETCH FIRST 1 ROWS ONLY";

    private Map<String, LoadRef> neighbours(Connection c, Collection<LoadRef> loads) throws SQLException {
        Map<String, LoadRef> found = new HashMap<>();
        if (loads.isEmpty()) {
            return found;
        }
        if (dialect != Dialect.POSTGRESQL) {
            String sql = PREVIOUS.formatted("?", "?", "?", "?", "?");
            for (LoadRef load : loads) {
                one(c, sql, load).ifPresent(n -> found.put(load.loadId(), n));
            }
            return found;
        }
        // Every load's neighbour in one round trip: the loads as arrays, each looked up by the history index.
        String sql = "SELECT v.for_load, n.* FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::int[], ?::bigint[]) AS v(for_load, "
                + "deployment_id, model_id, release_name, summary_partition, summary_offset) CROSS JOIN LATERAL ("
                + PREVIOUS.formatted("v.deployment_id", "v.model_id", "v.release_name", "v.summary_partition", "v.summary_offset") + ") n";
        List<LoadRef> all = List.copyOf(loads);
        for (Map.Entry<String, LoadRef> row : Sql.list(c, sql, rs -> Map.entry(rs.getString("for_load"), ref(rs)),
                c.createArrayOf("text", all.stream().map(LoadRef::loadId).toArray()),
                c.createArrayOf("text", all.stream().map(LoadRef::deploymentId).toArray()),
                c.createArrayOf("text", all.stream().map(LoadRef::modelId).toArray()),
                c.createArrayOf("text", all.stream().map(LoadRef::release).toArray()),
                c.createArrayOf("int4", all.stream().map(l -> l.position().partition()).toArray()),
                c.createArrayOf("int8", all.stream().map(l -> l.position().offset()).toArray()))) {
            found.put(row.getKey(), row.getValue());
        }
        return found;
    }

    private static Optional<LoadRef> one(Connection c, String sql, LoadRef load) throws SQLException {
        return Sql.first(c, sql, RegressionDetector::ref, load.deploymentId(), load.modelId(), load.release(), load.position().partition(),
                load.position().offset());
    }

    /** A load as a row read with {@link LoadRef#COLUMNS} has it. */
    public static LoadRef ref(ResultSet rs) throws SQLException {
        return new LoadRef(rs.getString("load_id"), rs.getString("deployment_id"), rs.getString("model_id"), rs.getString("release_name"),
                rs.getTimestamp("occurred_at").toInstant(), rs.getString("resolver_version"), rs.getString("plan_digest"),
                new LoadRef.Position(rs.getInt("summary_partition"), rs.getLong("summary_offset")));
    }

    private static String truncate(String reason) {
        return reason == null || reason.length() <= 4000 ? reason : reason.substring(0, 3997) + "...";
    }
}
