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
 * On PostgreSQL a plan's tensors are one row, each column an array in tensor order ({@code plan_tensor_arrays}),
 * not a row per tensor: a new plan costs PostgreSQL one row and one index entry where it cost 146 of each
 * (docs/adr/0017). {@code plan_tensors} becomes a view that unnests them into the rows, with the columns, names and
 * order it had, so every reader reads it unchanged; only writers name the table. A plan's arrays are as long as each
 * other and hold no negative size (checked). H2, the demo's embedded store, keeps the table as it was.
 */
public class V22__plan_tensors_as_arrays extends BaseJavaMigration {
    private static final Logger LOG = LoggerFactory.getLogger(V22__plan_tensors_as_arrays.class);

    /** plan_tensors' columns after the digest, with their types, as V8 made them. */
    private static final String[][] COLUMNS = {
            {"tensor_index", "INTEGER"}, {"tensor_name", "VARCHAR(1000)"}, {"dtype", "VARCHAR(20)"}, {"stored_encoding", "VARCHAR(100)"},
            {"stored_format", "VARCHAR(150)"}, {"element_count", "BIGINT"}, {"stored_bytes", "BIGINT"}, {"size_estimated", "BOOLEAN"},
            {"resident_format", "VARCHAR(150)"}, {"resident_bytes", "BIGINT"}, {"memory_domain", "VARCHAR(20)"}, {"scope_kind", "VARCHAR(10)"},
            {"mapping_requested", "BOOLEAN"}, {"reason_code", "VARCHAR(40)"}, {"placement_reason", "VARCHAR(40)"},
            {"mapping_blockers", "VARCHAR(200)"}, {"reason", "VARCHAR(4000)"}};

    @Override
    public void migrate(Context context) throws Exception {
        Connection c = context.getConnection();
        if (!c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT).contains("postgres")) {
            return;
        }
        StringBuilder create = new StringBuilder("CREATE TABLE plan_tensor_arrays (\n    plan_digest VARCHAR(64) NOT NULL PRIMARY KEY");
        StringBuilder sameLength = new StringBuilder();
        StringBuilder aggregated = new StringBuilder();
        StringBuilder unnested = new StringBuilder();
        StringBuilder names = new StringBuilder();
        for (String[] column : COLUMNS) {
            create.append(",\n    ").append(column[0]).append(' ').append(column[1]).append("[] NOT NULL");
            if (!column[0].equals("tensor_index")) {
                sameLength.append(" AND cardinality(").append(column[0]).append(") = cardinality(tensor_index)");
            }
            aggregated.append(", array_agg(").append(column[0]).append(" ORDER BY tensor_index)");
            unnested.append(unnested.isEmpty() ? "" : ", ").append("a.").append(column[0]);
            names.append(names.isEmpty() ? "" : ", ").append(column[0]);
        }
        create.append(",\n    CONSTRAINT plan_tensor_arrays_same_length CHECK (").append(sameLength.substring(" AND ".length())).append(')');
        create.append(",\n    CONSTRAINT plan_tensor_arrays_sizes_not_negative CHECK (0 <= ALL(element_count) AND 0 <= ALL(stored_bytes) "
                + "AND 0 <= ALL(resident_bytes))\n)");
        execute(c, create.toString());
        // A plan's arrays are kilobytes, compressed as they are stored: LZ4 where the server has it (PostgreSQL's own
        // default, pglz, took twice the time to write them).
        boolean lz4;
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' "
                + "AND 'lz4' = ANY (enumvals)")) {
            lz4 = rs.next();
        }
        if (lz4) {
            for (String[] column : COLUMNS) {
                execute(c, "ALTER TABLE plan_tensor_arrays ALTER COLUMN " + column[0] + " SET COMPRESSION lz4");
            }
        }
        int plans;
        try (Statement s = c.createStatement()) {
            plans = s.executeUpdate("INSERT INTO plan_tensor_arrays SELECT plan_digest" + aggregated + " FROM plan_tensors GROUP BY plan_digest");
        }
        execute(c, "DROP VIEW load_tensors");
        execute(c, "DROP TABLE plan_tensors");
        execute(c, "CREATE VIEW plan_tensors AS SELECT a.plan_digest, t." + names.toString().replace(", ", ", t.") + " FROM plan_tensor_arrays a "
                + "CROSS JOIN LATERAL unnest(" + unnested + ") AS t(" + names + ")");
        // As V19 left it.
        execute(c, """
                CREATE VIEW load_tensors AS
                SELECT l.load_id, l.resolver_version, l.policy_digest, t.plan_digest, t.tensor_index, t.tensor_name, t.dtype, t.stored_encoding,
                       t.stored_format, t.element_count, t.stored_bytes, t.size_estimated, t.resident_format, t.resident_bytes, t.memory_domain,
                       t.scope_kind, t.mapping_requested, t.reason_code, t.placement_reason, t.mapping_blockers, t.reason
                FROM loads l JOIN plan_tensors t ON t.plan_digest = l.plan_digest""");
        if (plans > 0) {
            LOG.info("plan_tensors: {} plans now keep their tensors in one row each", plans);
        }
    }

    private static void execute(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }
}
