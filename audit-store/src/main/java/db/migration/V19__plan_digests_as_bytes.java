package db.migration;

import org.flywaydb.core.api.migration.BaseJavaMigration;
import org.flywaydb.core.api.migration.Context;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HexFormat;
import java.util.Locale;

/**
 * A load row names its plan and its predecessor's plan by their SHA-256 as 32 bytes, not as 64 hex characters: 65 of
 * the row's bytes each, 130 of about 350 at the fleet mix (docs/adr/0014). {@code load_rows} is copied once into a
 * table whose {@code plan_bytes} and {@code previous_plan_bytes} replace {@code plan_digest} and
 * {@code previous_plan_digest} (a copy, as V17's: rewriting every row in place would leave the table twice its size
 * until vacuumed); the views over it give the digests back as the lower-case hex they were, under their names, so
 * every reader and the hash chain read them unchanged ({@code release_heads} also gives its head's previous plan). Every digest a store ever wrote is 64 lower-case hex
 * characters; a row holding anything else stops the migration, naming it, rather than lose it.
 */
public class V19__plan_digests_as_bytes extends BaseJavaMigration {
    private static final Logger LOG = LoggerFactory.getLogger(V19__plan_digests_as_bytes.class);

    /** The columns kept as they are, in the order V17 and V18 left them (fixed-width first). */
    private static final String KEPT = "occurred_at, resolved_at, completed_at, stored_bytes, resident_bytes, heap_bytes, offheap_bytes, "
            + "mapped_bytes, summary_offset, source_offset, site_key, build_key, tensor_count, heap_tensors, offheap_tensors, mapped_tensors, "
            + "summary_partition, complete, is_head, load_id, deployment_id, release_name, model_id, previous_load_id, previous_release";

    @Override
    public void migrate(Context context) throws Exception {
        Connection c = context.getConnection();
        boolean postgres = c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT).contains("postgres");
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT load_id, plan_digest, previous_plan_digest FROM load_rows "
                + "WHERE (plan_digest IS NOT NULL AND (LENGTH(plan_digest) <> 64 OR LOWER(plan_digest) <> plan_digest)) "
                + "OR (previous_plan_digest IS NOT NULL AND (LENGTH(previous_plan_digest) <> 64 OR LOWER(previous_plan_digest) <> previous_plan_digest)) "
                + "FETCH FIRST 1 ROWS ONLY")) {
            if (rs.next()) {
                throw new SQLException("load " + rs.getString(1) + " names a plan that is no SHA-256 in lower-case hex ('" + rs.getString(2)
                        + "', previous '" + rs.getString(3) + "'): the store was not written by placement-audit; nothing was changed");
            }
        }
        execute(c, "DROP VIEW release_heads");
        execute(c, "DROP VIEW findings");
        execute(c, "DROP VIEW load_tensors");
        execute(c, "DROP VIEW loads");
        String bytes = postgres ? "BYTEA" : "VARBINARY(32)";
        execute(c, """
                CREATE TABLE load_rows_v19 (
                    occurred_at          TIMESTAMP WITH TIME ZONE NOT NULL,
                    resolved_at          TIMESTAMP WITH TIME ZONE NOT NULL,
                    completed_at         TIMESTAMP WITH TIME ZONE,
                    stored_bytes         BIGINT       NOT NULL,
                    resident_bytes       BIGINT       NOT NULL,
                    heap_bytes           BIGINT       NOT NULL,
                    offheap_bytes        BIGINT       NOT NULL,
                    mapped_bytes         BIGINT       NOT NULL,
                    summary_offset       BIGINT,
                    source_offset        BIGINT,
                    site_key             BIGINT       NOT NULL,
                    build_key            BIGINT       NOT NULL,
                    tensor_count         INTEGER      NOT NULL,
                    heap_tensors         INTEGER      NOT NULL,
                    offheap_tensors      INTEGER      NOT NULL,
                    mapped_tensors       INTEGER      NOT NULL,
                    summary_partition    INTEGER,
                    complete             BOOLEAN      NOT NULL,
                    is_head              BOOLEAN      DEFAULT FALSE NOT NULL,
                    load_id              VARCHAR(36)  NOT NULL,
                    deployment_id        VARCHAR(200) NOT NULL,
                    release_name         VARCHAR(200) NOT NULL,
                    model_id             VARCHAR(200) NOT NULL,
                    previous_load_id     VARCHAR(36),
                    previous_release     VARCHAR(200),
                    plan_bytes           %1$s,
                    previous_plan_bytes  %1$s
                )""".formatted(bytes));
        long rows;
        try (Statement s = c.createStatement()) {
            // PostgreSQL decodes the hex itself; H2 has no function for it, so its rows get their bytes below (an embedded
            // store, small).
            rows = s.executeUpdate("INSERT INTO load_rows_v19 (" + KEPT + ", plan_bytes, previous_plan_bytes) SELECT " + KEPT + ", "
                    + (postgres ? "decode(plan_digest, 'hex'), decode(previous_plan_digest, 'hex')" : "NULL, NULL") + " FROM load_rows");
        }
        if (!postgres) {
            HexFormat hex = HexFormat.of();
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT load_id, plan_digest, previous_plan_digest FROM load_rows "
                    + "WHERE plan_digest IS NOT NULL OR previous_plan_digest IS NOT NULL");
                 PreparedStatement update = c.prepareStatement("UPDATE load_rows_v19 SET plan_bytes = ?, previous_plan_bytes = ? WHERE load_id = ?")) {
                int batched = 0;
                while (rs.next()) {
                    update.setBytes(1, rs.getString(2) == null ? null : hex.parseHex(rs.getString(2)));
                    update.setBytes(2, rs.getString(3) == null ? null : hex.parseHex(rs.getString(3)));
                    update.setString(3, rs.getString(1));
                    update.addBatch();
                    if (++batched % 1_000 == 0) {
                        update.executeBatch();
                    }
                }
                update.executeBatch();
            }
        }
        execute(c, "DROP TABLE load_rows");
        execute(c, "ALTER TABLE load_rows_v19 RENAME TO load_rows");
        execute(c, "ALTER TABLE load_rows ADD CONSTRAINT loads_pkey PRIMARY KEY (load_id)");
        execute(c, "CREATE INDEX loads_history ON load_rows (deployment_id, model_id, complete, summary_partition, summary_offset)");
        execute(c, "CREATE INDEX loads_by_release ON load_rows (release_name, complete)");
        execute(c, postgres ? "CREATE INDEX loads_waiting ON load_rows (deployment_id) WHERE complete = FALSE"
                : "CREATE INDEX loads_waiting ON load_rows (deployment_id, complete)");
        execute(c, postgres ? "CREATE INDEX release_heads_by_release ON load_rows (release_name, model_id) WHERE is_head = TRUE"
                : "CREATE INDEX release_heads_by_release ON load_rows (is_head, release_name, model_id)");
        // A deployment's heads alone (tens, where its loads may be thousands): what marking a new head looks up, and
        // whether a deployment's head of a model is its latest (an incident's exposure).
        execute(c, postgres ? "CREATE INDEX release_heads_by_deployment ON load_rows (deployment_id) WHERE is_head = TRUE"
                : "CREATE INDEX release_heads_by_deployment ON load_rows (is_head, deployment_id)");
        String plan = hex(postgres, "r.plan_bytes");
        String previousPlan = hex(postgres, "r.previous_plan_bytes");
        execute(c, """
                CREATE VIEW loads AS
                SELECT r.load_id, r.deployment_id, s.cluster, s.host, r.release_name, r.model_id, b.model_name, b.model_sha256, s.platform_name,
                       s.profile_name, r.occurred_at, r.tensor_count, r.stored_bytes, r.resident_bytes, r.heap_bytes, r.offheap_bytes, r.mapped_bytes,
                       r.heap_tensors, r.offheap_tensors, r.mapped_tensors, b.resolver_version, b.policy_digest, r.resolved_at, r.complete,
                       r.completed_at, r.summary_partition, r.summary_offset, %1$s AS plan_digest, r.previous_load_id, r.previous_release,
                       %2$s AS previous_plan_digest, r.source_offset, r.site_key, r.build_key
                FROM load_rows r
                LEFT JOIN load_sites s ON s.site_key = r.site_key
                LEFT JOIN load_builds b ON b.build_key = r.build_key""".formatted(plan, previousPlan));
        execute(c, """
                CREATE VIEW load_tensors AS
                SELECT l.load_id, l.resolver_version, l.policy_digest, t.plan_digest, t.tensor_index, t.tensor_name, t.dtype, t.stored_encoding,
                       t.stored_format, t.element_count, t.stored_bytes, t.size_estimated, t.resident_format, t.resident_bytes, t.memory_domain,
                       t.scope_kind, t.mapping_requested, t.reason_code, t.placement_reason, t.mapping_blockers, t.reason
                FROM loads l JOIN plan_tensors t ON t.plan_digest = l.plan_digest""");
        execute(c, """
                CREATE VIEW findings AS
                SELECT r.load_id || '/' || CAST(f.seq AS VARCHAR(10)) AS finding_id, r.load_id, r.previous_load_id, r.deployment_id, r.model_id,
                       r.previous_release AS from_release, r.release_name AS to_release, f.kind, f.tensor_name, f.before_domain, f.after_domain,
                       f.before_bytes, f.after_bytes, f.before_format, f.after_format, f.before_reason, f.after_reason, r.completed_at AS detected_at
                FROM load_rows r JOIN plan_findings f ON f.from_plan = %2$s AND f.to_plan = %1$s""".formatted(plan, previousPlan));
        execute(c, """
                CREATE VIEW release_heads AS
                SELECT r.deployment_id, r.model_id, r.release_name, r.load_id, r.occurred_at, s.platform_name, s.profile_name, r.heap_bytes,
                       r.offheap_bytes, r.mapped_bytes, %1$s AS plan_digest, CAST(COALESCE(g.regressions, 0) AS INTEGER) AS regressions,
                       r.summary_partition, r.summary_offset, %2$s AS previous_plan_digest
                FROM load_rows r
                LEFT JOIN load_sites s ON s.site_key = r.site_key
                LEFT JOIN (SELECT from_plan, to_plan, COUNT(*) AS regressions FROM plan_findings
                           WHERE kind IN ('LOST_MAPPING', 'OFFHEAP_GROWTH', 'HEAP_GROWTH') GROUP BY from_plan, to_plan) g
                       ON g.from_plan = %2$s AND g.to_plan = %1$s
                WHERE r.is_head = TRUE""".formatted(plan, previousPlan));
        if (rows > 0) {
            LOG.info("loads: {} rows now name their plans by their digests' bytes", rows);
        }
    }

    /** A digest's bytes as the lower-case hex the store always wrote. */
    private static String hex(boolean postgres, String column) {
        return postgres ? "encode(" + column + ", 'hex')" : "LOWER(RAWTOHEX(" + column + "))";
    }

    private static void execute(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }
}
