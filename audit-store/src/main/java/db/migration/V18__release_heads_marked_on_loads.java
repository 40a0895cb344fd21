package db.migration;

import org.flywaydb.core.api.migration.BaseJavaMigration;
import org.flywaydb.core.api.migration.Context;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;

/**
 * A release head is a mark on its load's row, not a copy of it (docs/adr/0014): {@code release_heads} held, for every
 * deployment, model and release, the latest complete load's own values again (about 325 bytes a head with its two
 * indexes), and at the fleet mix, where a deployment loads each model once per release, every load is a head. The
 * rows gain {@code is_head}; {@code release_heads} becomes a view of the marked rows with the columns the table had,
 * its site's platform and profile joined back and its regressions counted from its pair of plans' findings (what the
 * table kept, counted when the head moved). Two partial indexes on PostgreSQL hold the marked rows only: by release
 * and model (the fleet view) and by deployment (marking a head, an incident's exposure).
 */
public class V18__release_heads_marked_on_loads extends BaseJavaMigration {
    private static final Logger LOG = LoggerFactory.getLogger(V18__release_heads_marked_on_loads.class);

    @Override
    public void migrate(Context context) throws Exception {
        Connection c = context.getConnection();
        boolean postgres = c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT).contains("postgres");
        long heads = count(c, "SELECT COUNT(*) FROM release_heads");
        execute(c, "ALTER TABLE load_rows ADD COLUMN is_head BOOLEAN DEFAULT FALSE NOT NULL");
        long marked;
        try (Statement s = c.createStatement()) {
            marked = s.executeUpdate("UPDATE load_rows SET is_head = TRUE WHERE load_id IN (SELECT load_id FROM release_heads)");
        }
        if (marked != heads) {
            throw new SQLException("release_heads: " + marked + " load rows marked of " + heads + " heads");
        }
        execute(c, "DROP TABLE release_heads");
        execute(c, postgres ? "CREATE INDEX release_heads_by_release ON load_rows (release_name, model_id) WHERE is_head = TRUE"
                : "CREATE INDEX release_heads_by_release ON load_rows (is_head, release_name, model_id)");
        // A deployment's heads alone (tens, where its loads may be thousands): what marking a new head looks up, and
        // whether a deployment's head of a model is its latest (an incident's exposure).
        execute(c, postgres ? "CREATE INDEX release_heads_by_deployment ON load_rows (deployment_id) WHERE is_head = TRUE"
                : "CREATE INDEX release_heads_by_deployment ON load_rows (is_head, deployment_id)");
        execute(c, """
                CREATE VIEW release_heads AS
                SELECT r.deployment_id, r.model_id, r.release_name, r.load_id, r.occurred_at, s.platform_name, s.profile_name, r.heap_bytes,
                       r.offheap_bytes, r.mapped_bytes, r.plan_digest, CAST(COALESCE(g.regressions, 0) AS INTEGER) AS regressions,
                       r.summary_partition, r.summary_offset
                FROM load_rows r
                LEFT JOIN load_sites s ON s.site_key = r.site_key
                LEFT JOIN (SELECT from_plan, to_plan, COUNT(*) AS regressions FROM plan_findings
                           WHERE kind IN ('LOST_MAPPING', 'OFFHEAP_GROWTH', 'HEAP_GROWTH') GROUP BY from_plan, to_plan) g
                       ON g.from_plan = r.previous_plan_digest AND g.to_plan = r.plan_digest
                WHERE r.is_head = TRUE""");
        if (heads > 0) {
            LOG.info("release heads: {} load rows marked as their release's head", heads);
        }
    }

    private static long count(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static void execute(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }
}
