package dev.placementaudit.store.regression;

import dev.placementaudit.store.db.Dialect;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * When a load completes: find the latest completed load of the previous release (same deployment and model, a
 * different release, earlier), diff them, and record the findings - inside the ingesting transaction.
 */
public final class RegressionDetector {
    private static final List<String> FINDING_COLUMNS = List.of("from_plan", "to_plan", "seq", "kind", "tensor_name", "before_domain",
            "after_domain", "before_bytes", "after_bytes", "before_format", "after_format", "before_reason", "after_reason");
    private static final List<String> FINDING_TYPES = List.of("VARCHAR(64)", "VARCHAR(64)", "INTEGER", "VARCHAR(30)", "VARCHAR(1000)",
            "VARCHAR(20)", "VARCHAR(20)", "BIGINT", "BIGINT", "VARCHAR(150)", "VARCHAR(150)", "VARCHAR(4000)", "VARCHAR(4000)");

    private final GrowthRule offHeap;
    private final GrowthRule heap;
    private final String insertFinding;
    /** Placements by plan, and comparisons by pair of plans: plans never change, so what was read once holds. */
    private final PlanCache plans = new PlanCache(64);
    private final Map<String, PlanComparison> comparisons = PlanCache.lru(256);

    public RegressionDetector(Dialect dialect, GrowthRule offHeap, GrowthRule heap) {
        this.offHeap = offHeap;
        this.heap = heap;
        this.insertFinding = dialect.insertIgnoringDuplicates("plan_findings", FINDING_COLUMNS, FINDING_TYPES,
                List.of("from_plan", "to_plan", "seq"));
    }

    /**
     * Diffs the load (whose placements the caller has) against its predecessor and stores the findings; empty when
     * it has none (a first release). A load compared again (its predecessor arrived late) then names the new one.
     */
    public Optional<Detection> detect(Connection c, LoadRef load, List<TensorPlacement> placements) throws SQLException {
        Optional<LoadRef> previous = previous(c, load);
        if (previous.isEmpty()) {
            return Optional.empty();
        }
        PlanComparison comparison = compare(c, previous.get(), load, placements);
        List<Finding> findings = comparison.findings();
        List<RootCauses.CauseGroup> causes = comparison.causes();
        // The load names what it was compared with; the findings are the pair of plans', stored once for every load
        // that makes the same change (a comparison made again, with a later-arriving predecessor, just names another).
        try (PreparedStatement compared = c.prepareStatement("UPDATE loads SET previous_load_id = ?, previous_release = ?, "
                + "previous_plan_digest = ? WHERE load_id = ?")) {
            compared.setString(1, previous.get().loadId());
            compared.setString(2, previous.get().release());
            compared.setString(3, previous.get().planDigest());
            compared.setString(4, load.loadId());
            compared.executeUpdate();
        }
        if (!findings.isEmpty() && !pairStored(c, previous.get().planDigest(), load.planDigest())) {
            try (PreparedStatement insert = c.prepareStatement(insertFinding)) {
                for (int i = 0; i < findings.size(); i++) {
                    Finding f = findings.get(i);
                    Object[] values = {previous.get().planDigest(), load.planDigest(), i, f.kind().name(), f.tensorName(), f.beforeDomain(),
                            f.afterDomain(), f.beforeBytes(), f.afterBytes(), f.beforeFormat(), f.afterFormat(), truncate(f.beforeReason()),
                            truncate(f.afterReason())};
                    for (int v = 0; v < values.length; v++) {
                        insert.setObject(v + 1, values[v]);
                    }
                    insert.addBatch();
                }
                insert.executeBatch();
            }
        }
        return Optional.of(new Detection(load, previous.get(), findings, causes));
    }

    /**
     * The two loads' plans compared: nothing when they are one plan (no read at all), else the diff of the two plans,
     * remembered by the pair (a fleet repeats the same few pairs).
     */
    private PlanComparison compare(Connection c, LoadRef before, LoadRef after, List<TensorPlacement> afterPlacements) throws SQLException {
        if (before.planDigest() != null && before.planDigest().equals(after.planDigest())) {
            return PlanComparison.SAME;
        }
        String pair = before.planDigest() + ">" + after.planDigest();
        PlanComparison known = before.planDigest() == null || after.planDigest() == null ? null : comparisons.get(pair);
        if (known != null) {
            return known;
        }
        List<TensorPlacement> beforePlacements = plans.placements(c, before);
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
        try (PreparedStatement s = c.prepareStatement("SELECT 1 FROM plan_findings WHERE from_plan = ? AND to_plan = ? AND seq = 0")) {
            s.setString(1, from);
            s.setString(2, to);
            try (ResultSet rs = s.executeQuery()) {
                return rs.next();
            }
        }
    }

    /** The plans this detector has read or been given, by digest. */
    public PlanCache plans() {
        return plans;
    }

    /** The completed load a later one should now be compared with, when this one arrived late. */
    public Optional<LoadRef> successor(Connection c, LoadRef load) throws SQLException {
        String sql = "SELECT load_id, deployment_id, model_id, release_name, occurred_at, resolver_version, plan_digest FROM loads "
                + "WHERE deployment_id = ? AND model_id = ? AND complete = TRUE AND release_name <> ? AND occurred_at > ? "
                + "ORDER BY occurred_at ASC FETCH FIRST 1 ROWS ONLY";
        return one(c, sql, load);
    }

    public static Optional<LoadRef> previous(Connection c, LoadRef load) throws SQLException {
        String sql = "SELECT load_id, deployment_id, model_id, release_name, occurred_at, resolver_version, plan_digest FROM loads "
                + "WHERE deployment_id = ? AND model_id = ? AND complete = TRUE AND release_name <> ? AND occurred_at < ? "
                + "ORDER BY occurred_at DESC FETCH FIRST 1 ROWS ONLY";
        return one(c, sql, load);
    }

    /** Where each tensor of a plan lands, in tensor order. */
    public static List<TensorPlacement> plan(Connection c, String planDigest) throws SQLException {
        List<TensorPlacement> tensors = new ArrayList<>();
        try (PreparedStatement s = c.prepareStatement("SELECT tensor_name, tensor_index, memory_domain, resident_bytes, stored_format, "
                + "resident_format, reason_code, mapping_blockers, reason FROM plan_tensors WHERE plan_digest = ? ORDER BY tensor_index")) {
            s.setString(1, planDigest);
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    tensors.add(new TensorPlacement(rs.getString(1), rs.getInt(2), rs.getString(3), rs.getLong(4), rs.getString(5),
                            rs.getString(6), rs.getString(7), rs.getString(8), rs.getString(9)));
                }
            }
        }
        return tensors;
    }

    private static Optional<LoadRef> one(Connection c, String sql, LoadRef load) throws SQLException {
        try (PreparedStatement s = c.prepareStatement(sql)) {
            s.setString(1, load.deploymentId());
            s.setString(2, load.modelId());
            s.setString(3, load.release());
            s.setTimestamp(4, Timestamp.from(load.occurredAt()));
            try (ResultSet rs = s.executeQuery()) {
                return rs.next() ? Optional.of(ref(rs)) : Optional.empty();
            }
        }
    }

    public static LoadRef ref(ResultSet rs) throws SQLException {
        return new LoadRef(rs.getString("load_id"), rs.getString("deployment_id"), rs.getString("model_id"), rs.getString("release_name"),
                rs.getTimestamp("occurred_at").toInstant(), rs.getString("resolver_version"), rs.getString("plan_digest"));
    }

    private static String truncate(String reason) {
        return reason == null || reason.length() <= 4000 ? reason : reason.substring(0, 3997) + "...";
    }
}
