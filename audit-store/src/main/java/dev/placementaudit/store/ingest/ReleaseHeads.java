package dev.placementaudit.store.ingest;

import dev.placementaudit.store.db.InList;
import dev.placementaudit.store.regression.LoadRef;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code release_heads}: the latest complete load in the log of each deployment, model and release, with what the fleet
 * view shows of it, kept as loads complete, so that {@code fleet} reads one row per deployment and model of a release.
 */
public final class ReleaseHeads {
    /** The kinds of finding that count as a regression where the fleet is shown (SQL literals). */
    public static final String REGRESSION_KINDS = "'LOST_MAPPING', 'OFFHEAP_GROWTH', 'HEAP_GROWTH'";

    /** The columns of a release head: each as the load has it, then the regressions of the load's pair of plans. */
    public static final String COLUMNS = "deployment_id, model_id, release_name, load_id, occurred_at, platform_name, "
            + "profile_name, heap_bytes, offheap_bytes, mapped_bytes, plan_digest, summary_partition, summary_offset, regressions";

    /**
     * {@link #COLUMNS} as a query over {@code loads l} selects them (named as the columns): the load's own values, and how
     * many regressions its comparison found, counted once here rather than by every fleet view.
     */
    public static final String VALUES = "l.deployment_id, l.model_id, l.release_name, l.load_id, l.occurred_at, l.platform_name, "
            + "l.profile_name, l.heap_bytes, l.offheap_bytes, l.mapped_bytes, l.plan_digest, l.summary_partition, l.summary_offset, "
            + "(SELECT COUNT(*) FROM plan_findings f WHERE f.from_plan = l.previous_plan_digest AND f.to_plan = l.plan_digest "
            + "AND f.kind IN (" + REGRESSION_KINDS + ")) AS regressions";

    /**
     * Standard MERGE (PostgreSQL 15, H2): a release's head moves to a load later in the log (a head kept from before V13
     * has no position and is older than any).
     */
    private static final String MERGE = "MERGE INTO release_heads AS t USING (SELECT " + VALUES
            + " FROM loads l WHERE l.load_id IN (%s) AND l.complete = TRUE) AS s ON t.deployment_id = s.deployment_id AND t.model_id = s.model_id AND "
            + "t.release_name = s.release_name WHEN MATCHED AND (t.summary_offset IS NULL OR (s.summary_partition, s.summary_offset) >= "
            + "(t.summary_partition, t.summary_offset)) THEN UPDATE SET load_id = s.load_id, occurred_at = s.occurred_at, platform_name = "
            + "s.platform_name, profile_name = s.profile_name, heap_bytes = s.heap_bytes, offheap_bytes = s.offheap_bytes, mapped_bytes = "
            + "s.mapped_bytes, plan_digest = s.plan_digest, summary_partition = "
            + "s.summary_partition, summary_offset = s.summary_offset, regressions = s.regressions WHEN NOT MATCHED THEN INSERT ("
            + COLUMNS + ") VALUES (" + COLUMNS.replaceAll("(\\w+)", "s.$1") + ")";

    private ReleaseHeads() {
    }

    /**
     * Each of these just-completed loads becomes its release's head: loads complete in log order, so it is the latest of
     * its deployment, model and release; of several in the batch, only the last in the log is merged.
     */
    static void advance(Connection c, Collection<LoadRef> loads) throws SQLException {
        Map<List<String>, LoadRef> latest = new LinkedHashMap<>();
        loads.forEach(load -> latest.merge(List.of(load.deploymentId(), load.modelId(), load.release()), load,
                (a, b) -> LoadRef.IN_LOG_ORDER.compare(a, b) >= 0 ? a : b));
        if (latest.isEmpty()) {
            return;
        }
        // One statement per chunk: each source row is a different head (one load per deployment, model and release).
        for (List<String> chunk : InList.chunks(latest.values().stream().map(LoadRef::loadId).toList())) {
            try (PreparedStatement merge = InList.prepare(c, MERGE, chunk)) {
                merge.executeUpdate();
            }
        }
    }
}
