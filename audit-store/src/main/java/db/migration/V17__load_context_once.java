package db.migration;

import dev.placementaudit.store.ingest.LoadContexts;
import org.flywaydb.core.api.migration.BaseJavaMigration;
import org.flywaydb.core.api.migration.Context;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * A load's context is stored once, not per load (docs/adr/0013): what a row of {@code loads} said of where the load
 * ran (cluster, host, platform, profile) and what it ran (model name and SHA-256, resolver version, policy digest) was
 * about 220 of its 570 bytes at the fleet mix, the same values for every load of a deployment and model. They move to
 * {@code load_sites} and {@code load_builds}, each distinct value once under a key ({@link LoadContexts}); the rows
 * move to {@code load_rows}, which keeps the two keys; and {@code loads} becomes a view that joins them back, with
 * the columns and names it had, so every query reads it as before. Writers write {@code load_rows}.
 *
 * <p>The joins are {@code LEFT JOIN}s on each dimension's primary key: PostgreSQL leaves out a join whose columns a
 * query does not read. The views over {@code loads} are made again as V11 made them, but for {@code findings}, which
 * reads {@code load_rows} (it needs none of a load's context); the table's indexes keep their names.
 */
public class V17__load_context_once extends BaseJavaMigration {
    private static final Logger LOG = LoggerFactory.getLogger(V17__load_context_once.class);

    /** The columns {@code load_rows} keeps, fixed-width first, widest first (no padding; see V11). */
    private static final String ROW_COLUMNS = "occurred_at, resolved_at, completed_at, stored_bytes, resident_bytes, heap_bytes, offheap_bytes, "
            + "mapped_bytes, summary_offset, source_offset, site_key, build_key, tensor_count, heap_tensors, offheap_tensors, mapped_tensors, "
            + "summary_partition, complete, load_id, deployment_id, release_name, model_id, plan_digest, previous_load_id, previous_release, "
            + "previous_plan_digest";

    /** The dimensions as this migration made them (V23 added the build's runtime): a migration never reads today's code's shape. */
    static final LoadContexts.Dimension SITES = new LoadContexts.Dimension("load_sites", "site_key",
            List.of("cluster", "host", "platform_name", "profile_name"), List.of("VARCHAR(200)", "VARCHAR(200)", "VARCHAR(100)", "VARCHAR(100)"));
    static final LoadContexts.Dimension BUILDS = new LoadContexts.Dimension("load_builds", "build_key",
            List.of("model_name", "model_sha256", "resolver_version", "policy_digest"), List.of("VARCHAR(500)", "VARCHAR(64)", "VARCHAR(100)", "VARCHAR(64)"));

    @Override
    public void migrate(Context context) throws Exception {
        Connection c = context.getConnection();
        boolean postgres = c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT).contains("postgres");
        for (LoadContexts.Dimension dimension : List.of(SITES, BUILDS)) {
            List<String> columns = new ArrayList<>();
            for (int i = 0; i < dimension.columns().size(); i++) {
                // model_sha256 may be NULL, as in loads; every other value is required.
                columns.add(dimension.columns().get(i) + " " + dimension.types().get(i) + (dimension.columns().get(i).equals("model_sha256") ? "" : " NOT NULL"));
            }
            execute(c, "CREATE TABLE " + dimension.table() + " (" + dimension.key() + " BIGINT NOT NULL PRIMARY KEY, " + String.join(", ", columns) + ")");
            fill(c, dimension);
            // Statistics of the just-filled table, so that the copy below hashes its join rather than looping over it per load
            // (a million loads: 154 s without them).
            execute(c, postgres ? "ANALYZE " + dimension.table() : "ANALYZE TABLE " + dimension.table());
        }
        execute(c, """
                CREATE TABLE load_rows (
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
                    load_id              VARCHAR(36)  NOT NULL,
                    deployment_id        VARCHAR(200) NOT NULL,
                    release_name         VARCHAR(200) NOT NULL,
                    model_id             VARCHAR(200) NOT NULL,
                    plan_digest          VARCHAR(64),
                    previous_load_id     VARCHAR(36),
                    previous_release     VARCHAR(200),
                    previous_plan_digest VARCHAR(64)
                )""");
        String copied = Arrays.stream(ROW_COLUMNS.split(", ")).map(column -> switch (column) {
            case "site_key" -> "s.site_key";
            case "build_key" -> "b.build_key";
            default -> "l." + column;
        }).collect(Collectors.joining(", "));
        long rows;
        try (Statement s = c.createStatement()) {
            rows = s.executeUpdate("INSERT INTO load_rows (" + ROW_COLUMNS + ") SELECT " + copied + " FROM loads l "
                    + "JOIN load_sites s ON " + matches(SITES, "s") + " JOIN load_builds b ON " + matches(BUILDS, "b"));
        }
        long before = count(c, "SELECT COUNT(*) FROM loads");
        if (rows != before) {
            throw new SQLException("load_rows: " + rows + " rows copied of " + before + " loads");
        }
        execute(c, "DROP VIEW findings");
        execute(c, "DROP VIEW load_tensors");
        execute(c, "DROP TABLE loads");
        execute(c, "ALTER TABLE load_rows ADD CONSTRAINT loads_pkey PRIMARY KEY (load_id)");
        execute(c, "CREATE INDEX loads_history ON load_rows (deployment_id, model_id, complete, summary_partition, summary_offset)");
        execute(c, "CREATE INDEX loads_by_release ON load_rows (release_name, complete)");
        execute(c, postgres ? "CREATE INDEX loads_waiting ON load_rows (deployment_id) WHERE complete = FALSE"
                : "CREATE INDEX loads_waiting ON load_rows (deployment_id, complete)");
        execute(c, """
                CREATE VIEW loads AS
                SELECT r.load_id, r.deployment_id, s.cluster, s.host, r.release_name, r.model_id, b.model_name, b.model_sha256, s.platform_name,
                       s.profile_name, r.occurred_at, r.tensor_count, r.stored_bytes, r.resident_bytes, r.heap_bytes, r.offheap_bytes, r.mapped_bytes,
                       r.heap_tensors, r.offheap_tensors, r.mapped_tensors, b.resolver_version, b.policy_digest, r.resolved_at, r.complete,
                       r.completed_at, r.summary_partition, r.summary_offset, r.plan_digest, r.previous_load_id, r.previous_release,
                       r.previous_plan_digest, r.source_offset, r.site_key, r.build_key
                FROM load_rows r
                LEFT JOIN load_sites s ON s.site_key = r.site_key
                LEFT JOIN load_builds b ON b.build_key = r.build_key""");
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
                FROM load_rows l JOIN plan_findings f ON f.from_plan = l.previous_plan_digest AND f.to_plan = l.plan_digest""");
        if (rows > 0) {
            LOG.info("loads: {} rows now keep their site and build as keys ({} sites, {} builds)", rows,
                    count(c, "SELECT COUNT(*) FROM load_sites"), count(c, "SELECT COUNT(*) FROM load_builds"));
        }
    }

    /** Each distinct value of the dimension in {@code loads}, under its key. */
    private static void fill(Connection c, LoadContexts.Dimension dimension) throws SQLException {
        String columns = String.join(", ", dimension.columns());
        List<List<String>> values = new ArrayList<>();
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT DISTINCT " + columns + " FROM loads")) {
            while (rs.next()) {
                String[] value = new String[dimension.columns().size()];
                for (int i = 0; i < value.length; i++) {
                    value[i] = rs.getString(i + 1);
                }
                values.add(Arrays.asList(value));
            }
        }
        Map<List<String>, Long> keys = dimension.assign(values, new HashMap<>());
        try (PreparedStatement insert = c.prepareStatement("INSERT INTO " + dimension.table() + " (" + dimension.key() + ", " + columns + ") VALUES (?"
                + ", ?".repeat(dimension.columns().size()) + ")")) {
            int batched = 0;
            for (Map.Entry<List<String>, Long> row : keys.entrySet()) {
                insert.setLong(1, row.getValue());
                for (int i = 0; i < row.getKey().size(); i++) {
                    insert.setString(i + 2, row.getKey().get(i));
                }
                insert.addBatch();
                if (++batched % 1_000 == 0) {
                    insert.executeBatch();
                }
            }
            insert.executeBatch();
        }
    }

    /**
     * The dimension's row whose values are the load's, NULL matching NULL: equalities where a value is required (so that
     * PostgreSQL can hash the join of a large store), the null-safe comparison only for {@code model_sha256}.
     */
    private static String matches(LoadContexts.Dimension dimension, String alias) {
        return dimension.columns().stream().map(column -> column.equals("model_sha256")
                ? "(" + alias + "." + column + " = l." + column + " OR (" + alias + "." + column + " IS NULL AND l." + column + " IS NULL))"
                : alias + "." + column + " = l." + column).collect(Collectors.joining(" AND "));
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
