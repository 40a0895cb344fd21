package db.migration;

import org.flywaydb.core.api.migration.BaseJavaMigration;
import org.flywaydb.core.api.migration.Context;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HexFormat;
import java.util.Locale;

/**
 * A deployment's part in an incident names the pair of plans it showed the cause with by their SHA-256 as 32 bytes, not
 * as 64 hex characters (as a load row does since V19, docs/adr/0014): {@code incident_deployments.from_plan} and
 * {@code to_plan}, 130 of a row's 300 bytes, become 66. The table holds a row per incident and deployment, so it is
 * rewritten in place: on PostgreSQL by decoding the hex, on H2 (no hex-decoding function) through new columns filled by
 * a Java loop, which then take the old ones' names. A value that is no 64-character lower-case digest stops the
 * migration, naming it, rather than lose it.
 */
public class V21__incident_plans_as_bytes extends BaseJavaMigration {
    @Override
    public void migrate(Context context) throws Exception {
        Connection c = context.getConnection();
        boolean postgres = c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT).contains("postgres");
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT incident_id, deployment_id, from_plan, to_plan "
                + "FROM incident_deployments WHERE (from_plan IS NOT NULL AND (LENGTH(from_plan) <> 64 OR LOWER(from_plan) <> from_plan)) "
                + "OR (to_plan IS NOT NULL AND (LENGTH(to_plan) <> 64 OR LOWER(to_plan) <> to_plan)) FETCH FIRST 1 ROWS ONLY")) {
            if (rs.next()) {
                throw new SQLException("incident " + rs.getString(1) + " of deployment " + rs.getString(2) + " names a plan that is no SHA-256 in "
                        + "lower-case hex ('" + rs.getString(3) + "', '" + rs.getString(4) + "'): nothing was changed");
            }
        }
        if (postgres) {
            for (String column : new String[]{"from_plan", "to_plan"}) {
                execute(c, "ALTER TABLE incident_deployments ALTER COLUMN " + column + " TYPE BYTEA USING decode(" + column + ", 'hex')");
            }
            return;
        }
        execute(c, "ALTER TABLE incident_deployments ADD COLUMN from_plan_bytes VARBINARY(32)");
        execute(c, "ALTER TABLE incident_deployments ADD COLUMN to_plan_bytes VARBINARY(32)");
        HexFormat hex = HexFormat.of();
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT incident_id, deployment_id, from_plan, to_plan "
                + "FROM incident_deployments WHERE from_plan IS NOT NULL OR to_plan IS NOT NULL");
             PreparedStatement update = c.prepareStatement("UPDATE incident_deployments SET from_plan_bytes = ?, to_plan_bytes = ? "
                     + "WHERE incident_id = ? AND deployment_id = ?")) {
            while (rs.next()) {
                update.setBytes(1, rs.getString(3) == null ? null : hex.parseHex(rs.getString(3)));
                update.setBytes(2, rs.getString(4) == null ? null : hex.parseHex(rs.getString(4)));
                update.setString(3, rs.getString(1));
                update.setString(4, rs.getString(2));
                update.addBatch();
            }
            update.executeBatch();
        }
        for (String column : new String[]{"from_plan", "to_plan"}) {
            execute(c, "ALTER TABLE incident_deployments DROP COLUMN " + column);
            execute(c, "ALTER TABLE incident_deployments ALTER COLUMN " + column + "_bytes RENAME TO " + column);
        }
    }

    private static void execute(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }
}
