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
import java.util.List;
import java.util.Locale;

/**
 * A chain entry and a load row keep only what cannot be derived, so the store's size per load falls by about a
 * quarter:
 * <ul>
 * <li>The chain's hashes are stored as their 32 bytes ({@code BYTEA}), not as 64 hex characters: {@code prev_hash},
 *     {@code load_hash}, {@code decisions_hash} and {@code entry_hash} of {@code chain_entries}, and
 *     {@code chain_anchors.entry_hash}. Every stored value is converted, so entries written before still verify.</li>
 * <li>{@code prev_hash} and {@code decisions_hash} may be NULL, as entries are written from now on: an entry's previous
 *     hash is the hash of the entry before it (or the chain's anchor, or 32 zero bytes), and an encoding-2 entry's
 *     decisions hash is the plan digest its load's row names, which its load hash covers. {@code store verify}
 *     derives them, and checks them where an older entry stored them.</li>
 * <li>The index of entries by load goes (about 80 bytes an entry): each load is chained once by construction (under
 *     its deployment's lock, when its row turns complete), and {@code store verify} names a load chained twice.</li>
 * <li>{@code loads.placement_signature} goes: every complete load names a plan (V9), and the plan holds it.</li>
 * <li>{@code loads} is rewritten with its fixed-width columns first, widest first, so that PostgreSQL pads none of
 *     them to its alignment (about 35 bytes a row). Its indexes and the views over it are made again as they were.</li>
 * </ul>
 * PostgreSQL converts in place ({@code decode(..., 'hex')}); H2, which has no such function, through new columns.
 */
public class V11__store_only_what_cannot_be_derived extends BaseJavaMigration {
    private static final Logger LOG = LoggerFactory.getLogger(V11__store_only_what_cannot_be_derived.class);

    @Override
    public void migrate(Context context) throws Exception {
        Connection c = context.getConnection();
        boolean postgres = c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT).contains("postgres");
        execute(c, "DROP INDEX chain_entries_by_load");
        execute(c, "ALTER TABLE chain_entries ALTER COLUMN prev_hash DROP NOT NULL");
        execute(c, "ALTER TABLE chain_entries ALTER COLUMN decisions_hash DROP NOT NULL");
        for (String column : List.of("prev_hash", "load_hash", "decisions_hash", "entry_hash")) {
            toBytes(c, postgres, "chain_entries", List.of("deployment_id", "seq"), column);
        }
        toBytes(c, postgres, "chain_anchors", List.of("deployment_id"), "entry_hash");
        rewriteLoads(c);
    }

    /** Every column of {@code loads} but the signature, in the order the rewritten table has them. */
    private static final String LOAD_COLUMNS = "occurred_at, resolved_at, completed_at, stored_bytes, resident_bytes, heap_bytes, offheap_bytes, "
            + "mapped_bytes, summary_offset, tensor_count, heap_tensors, offheap_tensors, mapped_tensors, summary_partition, complete, load_id, "
            + "deployment_id, cluster, host, release_name, model_id, model_name, model_sha256, platform_name, profile_name, resolver_version, "
            + "policy_digest, plan_digest, previous_load_id, previous_release, previous_plan_digest";

    private static void rewriteLoads(Connection c) throws SQLException {
        execute(c, """
                CREATE TABLE loads_v11 (
                    occurred_at          TIMESTAMP WITH TIME ZONE NOT NULL,
                    resolved_at          TIMESTAMP WITH TIME ZONE NOT NULL,
                    completed_at         TIMESTAMP WITH TIME ZONE,
                    stored_bytes         BIGINT       NOT NULL,
                    resident_bytes       BIGINT       NOT NULL,
                    heap_bytes           BIGINT       NOT NULL,
                    offheap_bytes        BIGINT       NOT NULL,
                    mapped_bytes         BIGINT       NOT NULL,
                    summary_offset       BIGINT,
                    tensor_count         INTEGER      NOT NULL,
                    heap_tensors         INTEGER      NOT NULL,
                    offheap_tensors      INTEGER      NOT NULL,
                    mapped_tensors       INTEGER      NOT NULL,
                    summary_partition    INTEGER,
                    complete             BOOLEAN      NOT NULL,
                    load_id              VARCHAR(36)  NOT NULL,
                    deployment_id        VARCHAR(200) NOT NULL,
                    cluster              VARCHAR(200) NOT NULL,
                    host                 VARCHAR(200) NOT NULL,
                    release_name         VARCHAR(200) NOT NULL,
                    model_id             VARCHAR(200) NOT NULL,
                    model_name           VARCHAR(500) NOT NULL,
                    model_sha256         VARCHAR(64),
                    platform_name        VARCHAR(100) NOT NULL,
                    profile_name         VARCHAR(100) NOT NULL,
                    resolver_version     VARCHAR(100) NOT NULL,
                    policy_digest        VARCHAR(64)  NOT NULL,
                    plan_digest          VARCHAR(64),
                    previous_load_id     VARCHAR(36),
                    previous_release     VARCHAR(200),
                    previous_plan_digest VARCHAR(64)
                )""");
        long rows;
        try (Statement s = c.createStatement()) {
            rows = s.executeUpdate("INSERT INTO loads_v11 (" + LOAD_COLUMNS + ") SELECT " + LOAD_COLUMNS + " FROM loads");
        }
        // The views over loads, as V8 and V10 made them.
        execute(c, "DROP VIEW findings");
        execute(c, "DROP VIEW load_tensors");
        execute(c, "DROP TABLE loads");
        execute(c, "ALTER TABLE loads_v11 RENAME TO loads");
        execute(c, "ALTER TABLE loads ADD CONSTRAINT loads_pkey PRIMARY KEY (load_id)");
        execute(c, "CREATE INDEX loads_history ON loads (deployment_id, model_id, complete, occurred_at)");
        execute(c, "CREATE INDEX loads_by_release ON loads (release_name, complete)");
        execute(c, """
                CREATE VIEW load_tensors AS
                SELECT l.load_id, l.resolver_version, l.policy_digest, t.plan_digest, t.tensor_index, t.tensor_name, t.dtype, t.stored_encoding,
                       t.stored_format, t.element_count, t.stored_bytes, t.size_estimated, t.resident_format, t.resident_bytes, t.memory_domain,
                       t.scope_kind, t.mapping_requested, t.reason_code, t.placement_reason, t.mapping_blockers, t.reason
                FROM loads l JOIN plan_tensors t ON t.plan_digest = l.plan_digest""");
        execute(c, """
                CREATE VIEW findings AS
                SELECT l.load_id || '/' || CAST(f.seq AS VARCHAR(10)) AS finding_id, l.load_id, l.previous_load_id, l.deployment_id, l.model_id,
                       l.previous_release AS from_release, l.release_name AS to_release, f.kind, f.tensor_name, f.before_domain, f.after_domain,
                       f.before_bytes, f.after_bytes, f.before_format, f.after_format, f.before_reason, f.after_reason, l.completed_at AS detected_at
                FROM loads l JOIN plan_findings f ON f.from_plan = l.previous_plan_digest AND f.to_plan = l.plan_digest""");
        if (rows > 0) {
            LOG.info("loads: {} rows rewritten, fixed-width columns first", rows);
        }
    }

    /** Turns a column of hex text into the bytes it spells, keeping its name and whether it may be NULL. */
    private static void toBytes(Connection c, boolean postgres, String table, List<String> key, String column) throws SQLException {
        if (postgres) {
            execute(c, "ALTER TABLE " + table + " ALTER COLUMN " + column + " TYPE BYTEA USING decode(" + column + ", 'hex')");
            return;
        }
        boolean nullable;
        try (ResultSet rs = c.getMetaData().getColumns(null, c.getSchema(), table, column)) {
            if (!rs.next()) {
                throw new SQLException("no column " + table + "." + column);
            }
            nullable = rs.getInt("NULLABLE") != java.sql.DatabaseMetaData.columnNoNulls;
        }
        String bytes = column + "_bytes";
        execute(c, "ALTER TABLE " + table + " ADD COLUMN " + bytes + " BYTEA");
        String where = String.join(" AND ", key.stream().map(k -> k + " = ?").toList());
        long rows = 0;
        try (PreparedStatement select = c.prepareStatement("SELECT " + String.join(", ", key) + ", " + column + " FROM " + table);
             PreparedStatement update = c.prepareStatement("UPDATE " + table + " SET " + bytes + " = ? WHERE " + where);
             ResultSet rs = select.executeQuery()) {
            while (rs.next()) {
                String hex = rs.getString(key.size() + 1);
                update.setBytes(1, hex == null ? null : HexFormat.of().parseHex(hex));
                for (int i = 0; i < key.size(); i++) {
                    update.setObject(i + 2, rs.getObject(i + 1));
                }
                update.addBatch();
                if (++rows % 1_000 == 0) {
                    update.executeBatch();
                }
            }
            update.executeBatch();
        }
        execute(c, "ALTER TABLE " + table + " DROP COLUMN " + column);
        execute(c, "ALTER TABLE " + table + " RENAME COLUMN " + bytes + " TO " + column);
        if (!nullable) {
            execute(c, "ALTER TABLE " + table + " ALTER COLUMN " + column + " SET NOT NULL");
        }
        if (rows > 0) {
            LOG.info("{}.{}: {} values now stored as bytes", table, column, rows);
        }
    }

    private static void execute(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }
}
