package db.migration;

import dev.placementaudit.schemas.PlanDigest;
import dev.placementaudit.store.plans.PlanValues;
import dev.placementaudit.store.plans.StoredPlans;
import org.flywaydb.core.api.migration.BaseJavaMigration;
import org.flywaydb.core.api.migration.Context;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashSet;
import java.util.Set;

/**
 * Each distinct tensor row once (StoredPlans): {@code plan_tensors} becomes a view over {@code plan_rows} (plan digest,
 * tensor index, row id: about 130 bytes a tensor of a plan) and {@code tensor_rows} (a tensor's placement, named by
 * {@link StoredPlans#rowId}, its content). Plans that differ in a tensor or two (another release of a model, a renamed
 * or re-encoded weight) shared nothing before and wrote every tensor's 400-byte row again; now they write the narrow
 * rows and the tensor rows no plan had. Every stored row is carried over, ids computed here as the store computes them,
 * and {@code plan_tensors} reads as it did (same columns, same order), so its readers and the rebuild's comparison are
 * unchanged. {@code load_tensors}, a view over it, is made again as it was.
 */
public class V17__plan_tensor_rows_once extends BaseJavaMigration {
    private static final Logger LOG = LoggerFactory.getLogger(V17__plan_tensor_rows_once.class);

    @Override
    public void migrate(Context context) throws Exception {
        Connection c = context.getConnection();
        // Fixed-width columns first, widest first, so PostgreSQL pads none of them.
        execute(c, """
                CREATE TABLE tensor_rows (
                    element_count        BIGINT        NOT NULL,
                    stored_bytes         BIGINT        NOT NULL,
                    resident_bytes       BIGINT        NOT NULL,
                    tensor_index         INTEGER       NOT NULL,
                    size_estimated       BOOLEAN       NOT NULL,
                    mapping_requested    BOOLEAN       NOT NULL,
                    row_id               VARCHAR(32)   NOT NULL PRIMARY KEY,
                    tensor_name          VARCHAR(1000) NOT NULL,
                    dtype                VARCHAR(20)   NOT NULL,
                    stored_encoding      VARCHAR(100)  NOT NULL,
                    stored_format        VARCHAR(150)  NOT NULL,
                    resident_format      VARCHAR(150)  NOT NULL,
                    memory_domain        VARCHAR(20)   NOT NULL,
                    scope_kind           VARCHAR(10)   NOT NULL,
                    reason_code          VARCHAR(40)   NOT NULL,
                    placement_reason     VARCHAR(40)   NOT NULL,
                    mapping_blockers     VARCHAR(200)  NOT NULL,
                    reason               VARCHAR(4000) NOT NULL,
                    CONSTRAINT tensor_rows_sizes_not_negative CHECK (element_count >= 0 AND stored_bytes >= 0 AND resident_bytes >= 0)
                )""");
        execute(c, """
                CREATE TABLE plan_rows (
                    tensor_index         INTEGER       NOT NULL,
                    plan_digest          VARCHAR(64)   NOT NULL,
                    row_id               VARCHAR(32)   NOT NULL,
                    PRIMARY KEY (plan_digest, tensor_index)
                )""");
        long planRows = 0;
        Set<String> tensorRows = new HashSet<>();
        String columns = String.join(", ", PlanDigest.COLUMNS);
        try (PreparedStatement select = c.prepareStatement("SELECT plan_digest, " + columns + " FROM plan_tensors");
             PreparedStatement tensor = c.prepareStatement("INSERT INTO tensor_rows (row_id, " + columns + ") VALUES (?"
                     + ", ?".repeat(PlanDigest.COLUMNS.size()) + ")");
             PreparedStatement plan = c.prepareStatement("INSERT INTO plan_rows (plan_digest, tensor_index, row_id) VALUES (?, ?, ?)");
             ResultSet rs = select.executeQuery()) {
            while (rs.next()) {
                Object[] values = PlanValues.read(rs, 2);
                String id = StoredPlans.rowId(values);
                if (tensorRows.add(id)) {
                    tensor.setString(1, id);
                    for (int i = 0; i < values.length; i++) {
                        tensor.setObject(i + 2, values[i]);
                    }
                    tensor.addBatch();
                }
                plan.setString(1, rs.getString(1));
                plan.setInt(2, (Integer) values[0]);
                plan.setString(3, id);
                plan.addBatch();
                if (++planRows % 1_000 == 0) {
                    tensor.executeBatch();
                    plan.executeBatch();
                }
            }
            tensor.executeBatch();
            plan.executeBatch();
        }
        execute(c, "DROP VIEW load_tensors");
        execute(c, "DROP TABLE plan_tensors");
        execute(c, """
                CREATE VIEW plan_tensors AS
                SELECT p.plan_digest, p.tensor_index, t.tensor_name, t.dtype, t.stored_encoding, t.stored_format, t.element_count, t.stored_bytes,
                       t.size_estimated, t.resident_format, t.resident_bytes, t.memory_domain, t.scope_kind, t.mapping_requested, t.reason_code,
                       t.placement_reason, t.mapping_blockers, t.reason
                FROM plan_rows p JOIN tensor_rows t ON t.row_id = p.row_id""");
        execute(c, """
                CREATE VIEW load_tensors AS
                SELECT l.load_id, l.resolver_version, l.policy_digest, t.plan_digest, t.tensor_index, t.tensor_name, t.dtype, t.stored_encoding,
                       t.stored_format, t.element_count, t.stored_bytes, t.size_estimated, t.resident_format, t.resident_bytes, t.memory_domain,
                       t.scope_kind, t.mapping_requested, t.reason_code, t.placement_reason, t.mapping_blockers, t.reason
                FROM loads l JOIN plan_tensors t ON t.plan_digest = l.plan_digest""");
        if (planRows > 0) {
            LOG.info("plan_tensors: {} rows now plan rows naming {} distinct tensor rows", planRows, tensorRows.size());
        }
    }

    private static void execute(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }
}
