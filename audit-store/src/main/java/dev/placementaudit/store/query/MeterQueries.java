package dev.placementaudit.store.query;

import dev.placementaudit.store.alerts.AlertOutbox;
import dev.placementaudit.store.db.Sql;
import dev.placementaudit.store.incidents.RuntimeFindings;
import dev.placementaudit.store.incidents.RuntimeIncidents;
import dev.placementaudit.store.regression.LoadRef;
import dev.placementaudit.store.regression.RegressionDetector;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.function.Consumer;
import javax.sql.DataSource;

/**
 * What the store's meters start from, read once when the store starts; ingest keeps them current after that, from what
 * each batch has in hand. The open incidents they page on are read by {@code Incidents.paging}.
 */
public final class MeterQueries {
    private MeterQueries() {
    }

    /** The totals of a release head: the latest complete load, in log order, of a deployment, model and release. */
    public record HeadTotals(String deploymentId, String modelId, String release, LoadRef.Position position, long heapBytes, long offHeapBytes,
                             long mappedBytes) {
    }

    /** Every release head's totals (a head kept from before V13 has no position: it counts as the oldest). */
    public static List<HeadTotals> releaseHeads(DataSource database) throws SQLException {
        return Sql.list(database, "SELECT deployment_id, model_id, release_name, summary_partition, summary_offset, heap_bytes, offheap_bytes, "
                + "mapped_bytes FROM release_heads", rs -> {
                    long offset = rs.getLong(5);
                    LoadRef.Position position = rs.wasNull() ? new LoadRef.Position(-1, -1) : new LoadRef.Position(rs.getInt(4), offset);
                    return new HeadTotals(rs.getString(1), rs.getString(2), rs.getString(3), position, rs.getLong(6), rs.getLong(7), rs.getLong(8));
                });
    }

    /** The alerts no budget covers of each deployment and model's latest compared load. */
    public static List<AlertOutbox.StoredAlert> openAlerts(DataSource database) throws SQLException {
        return Sql.list(database, "SELECT a.alert_id, a.kind, a.deployment_id, a.model_id, a.from_release, a.to_release, a.delta_bytes FROM alerts a "
                + "JOIN loads l ON l.load_id = a.to_load_id WHERE a.suppressed_by IS NULL AND NOT EXISTS (SELECT 1 FROM loads x WHERE "
                + "x.complete = TRUE AND x.deployment_id = l.deployment_id AND x.model_id = l.model_id AND " + LoadRef.LATER_IN_THE_LOG + ")",
                rs -> new AlertOutbox.StoredAlert(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getString(5),
                        rs.getString(6), rs.getLong(7), null));
    }

    /**
     * Every complete load a runtime observed, with its plan's totals beside what was observed, handed to {@code each} as
     * read (a store holds one a load observed, so they are not gathered); the caller keeps the latest.
     */
    public static void observedLoads(DataSource database, Consumer<RuntimeIncidents.ObservedLoad> each) throws SQLException {
        String sql = "SELECT l." + LoadRef.COLUMNS.replace(", ", ", l.") + ", l.heap_bytes, l.offheap_bytes, l.mapped_bytes, "
                + RuntimeFindings.OBSERVED_COLUMNS + " FROM load_observations o JOIN loads l ON l.load_id = o.load_id "
                + "AND l.deployment_id = o.deployment_id WHERE l.complete = TRUE";
        try (Connection c = database.getConnection(); PreparedStatement s = c.prepareStatement(sql); ResultSet rs = s.executeQuery()) {
            while (rs.next()) {
                // After the load's columns (LoadRef.COLUMNS, 9) and its planned totals (3): what was observed.
                RuntimeFindings.Observed seen = RuntimeFindings.observed(rs, 13);
                each.accept(new RuntimeIncidents.ObservedLoad(RegressionDetector.ref(rs), rs.getLong("heap_bytes"), rs.getLong("offheap_bytes"),
                        rs.getLong("mapped_bytes"), seen.heap(), seen.offHeap(), seen.mapped()));
            }
        }
    }
}
