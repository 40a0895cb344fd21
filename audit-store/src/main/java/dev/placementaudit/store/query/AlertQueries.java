package dev.placementaudit.store.query;

import dev.placementaudit.store.alerts.AlertOutbox;
import dev.placementaudit.store.db.ById;
import dev.placementaudit.store.db.Sql;
import dev.placementaudit.store.db.UncheckedSqlException;
import dev.placementaudit.store.plans.PlanCache;
import dev.placementaudit.store.regression.LoadRef;
import dev.placementaudit.store.regression.RegressionDetector;
import dev.placementaudit.store.regression.ReleaseDiff;
import dev.placementaudit.store.regression.RootCauses;

import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;

/** What {@code store alerts} and the dashboard's alerts read: each per-load alert with its causes. */
public final class AlertQueries {
    /** A root-cause group without its tensors, as an alert lists it. */
    public record CauseSummary(String cause, int tensorCount, Map<String, Long> deltaBytesByDomain, String beforeReason, String afterReason,
                               String beforeFormat, String afterFormat) {
        static CauseSummary of(RootCauses.CauseGroup g) {
            return new CauseSummary(g.cause(), g.tensorCount(), g.deltaBytesByDomain(), g.beforeReason(), g.afterReason(), g.beforeFormat(),
                    g.afterFormat());
        }
    }

    /**
     * An alert, named in full (deployment, model, both releases and both loads), with why: its root causes and the
     * tensors that moved the most bytes in its domain, typed (never JSON inside a string).
     */
    public record AlertRow(String alertId, String kind, String deploymentId, String modelId, String fromRelease, String toRelease,
                           String fromLoadId, String toLoadId, long beforeBytes, long afterBytes, long deltaBytes, String rule,
                           List<CauseSummary> causes, List<RootCauses.TensorChange> topTensors, Instant detectedAt, String suppressedBy,
                           Instant publishedAt) {
    }

    /** The memory domain an alert of this kind is about. */
    public static String domainOf(String kind) {
        return switch (kind) {
            case "OFFHEAP_GROWTH" -> ReleaseDiff.OFFHEAP;
            case "HEAP_GROWTH" -> ReleaseDiff.HEAP;
            default -> ReleaseDiff.MMAP;
        };
    }

    private final DataSource database;
    private final PlanCache plans;

    AlertQueries(DataSource database, PlanCache plans) {
        this.database = database;
        this.plans = plans;
    }

    public long alertCount() throws SQLException {
        try (Connection c = database.getConnection()) {
            return Sql.number(c, "SELECT COUNT(*) FROM alerts");
        }
    }

    public List<AlertRow> alerts(String deployment, int limit) throws SQLException {
        String sql = "SELECT alert_id, kind, deployment_id, model_id, from_release, to_release, from_load_id, to_load_id, before_bytes, "
                + "after_bytes, delta_bytes, rule_text, detected_at, suppressed_by, published_at, " + AlertOutbox.TEXT_CAUSES + " FROM alerts a "
                + AlertOutbox.withText("") + (deployment == null ? "" : " WHERE deployment_id = ?") + " ORDER BY detected_at DESC, alert_id FETCH FIRST "
                + limit + " ROWS ONLY";
        List<AlertRow> alerts = new ArrayList<>();
        try (Connection c = database.getConnection(); PreparedStatement s = Sql.prepare(c, sql, deployment == null ? new Object[0]
                : new Object[] {deployment}); ResultSet rs = s.executeQuery()) {
            // Causes come from the two loads' decisions, read once per pair of loads (several alerts share one).
            Map<String, List<RootCauses.CauseGroup>> byPair = new HashMap<>();
            while (rs.next()) {
                String kind = rs.getString(2);
                String fromLoad = rs.getString(7);
                String toLoad = rs.getString(8);
                List<RootCauses.CauseGroup> causes = fromLoad == null ? List.of()
                        : byPair.computeIfAbsent(fromLoad + "/" + toLoad, pair -> causes(c, fromLoad, toLoad));
                String domain = domainOf(kind);
                List<CauseSummary> summaries = RootCauses.touching(causes, domain).stream().map(CauseSummary::of).toList();
                if (summaries.isEmpty()) {
                    // A load pruned by retention: the causes written with the alert still say why.
                    summaries = storedCauses(rs.getString(16));
                }
                alerts.add(new AlertRow(rs.getString(1), kind, rs.getString(3), rs.getString(4), rs.getString(5), rs.getString(6), fromLoad, toLoad,
                        rs.getLong(9), rs.getLong(10), rs.getLong(11), rs.getString(12), summaries, RootCauses.topTensors(causes, domain, 5),
                        Sql.instant(rs, 13), rs.getString(14), Sql.instant(rs, 15)));
            }
        } catch (UncheckedSqlException e) {
            throw e.getCause();
        }
        return alerts;
    }

    private static List<CauseSummary> storedCauses(String json) {
        try {
            return AlertOutbox.readCauses(json).stream().map(line -> new CauseSummary(line, 0, Map.of(), null, null, null, null)).toList();
        } catch (IOException e) {
            return List.of();
        }
    }

    private List<RootCauses.CauseGroup> causes(Connection c, String fromLoad, String toLoad) {
        try {
            Optional<LoadRef> from = ref(c, fromLoad);
            Optional<LoadRef> to = ref(c, toLoad);
            if (from.isEmpty() || to.isEmpty()) {
                return List.of();
            }
            return RootCauses.of(plans.placements(c, from.get().planDigest()), plans.placements(c, to.get().planDigest()));
        } catch (SQLException e) {
            throw new UncheckedSqlException(e);
        }
    }

    private static Optional<LoadRef> ref(Connection c, String loadId) throws SQLException {
        return Sql.first(c, "SELECT " + LoadRef.COLUMNS + " FROM loads WHERE " + ById.is(""), RegressionDetector::ref, loadId);
    }

}
