package db.migration;

import org.flywaydb.core.api.migration.BaseJavaMigration;
import org.flywaydb.core.api.migration.Context;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;

/**
 * An observation is the deployment's it names as well as its load's (issue 56): {@code load_observations} is keyed by
 * both, so an observation sent early under another deployment's load id can no longer shut out the load's own (the
 * first of a key wins). One of a load's observations whose deployment is not the load's is dead-lettered by the store,
 * at once when the load is known, else when it completes, and never draws a finding.
 */
public class V24__observations_keyed_by_load_and_deployment extends BaseJavaMigration {
    @Override
    public void migrate(Context context) throws Exception {
        Connection c = context.getConnection();
        boolean postgres = c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT).contains("postgres");
        execute(c, postgres ? "ALTER TABLE load_observations DROP CONSTRAINT load_observations_pkey" : "ALTER TABLE load_observations DROP PRIMARY KEY");
        execute(c, "ALTER TABLE load_observations ADD CONSTRAINT load_observations_pkey PRIMARY KEY (load_id, deployment_id)");
    }

    private static void execute(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }
}
