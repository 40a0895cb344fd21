package db.migration;

import dev.placementaudit.store.regression.LoadRef;
import org.flywaydb.core.api.migration.BaseJavaMigration;
import org.flywaydb.core.api.migration.Context;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;

/**
 * Each deployment's latest load of a model marked on its row ({@code is_latest}, issue 55): the release head last in the
 * log of the deployment and model, kept by ingestion beside the head mark ({@code ReleaseHeads.mark}). An incident's
 * exposure and the gate count the deployments a release is on now; they checked every head of the release for a later
 * one, a probe a head and, on a store partitioned by month (V27), a probe a month. Now they count the marks of the model
 * and release, by an index of them. Set here from the heads as they are.
 */
public class V29__latest_load_of_each_deployment_and_model extends BaseJavaMigration {
    @Override
    public void migrate(Context context) throws Exception {
        Connection c = context.getConnection();
        boolean postgres = c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT).contains("postgres");
        execute(c, "ALTER TABLE load_rows ADD COLUMN is_latest BOOLEAN DEFAULT FALSE NOT NULL");
        execute(c, "UPDATE load_rows l SET is_latest = TRUE WHERE l.is_head = TRUE AND NOT EXISTS (SELECT 1 FROM load_rows x WHERE x.is_head = TRUE "
                + "AND x.deployment_id = l.deployment_id AND x.model_id = l.model_id AND " + LoadRef.LATER_IN_THE_LOG + ")");
        execute(c, postgres
                ? "CREATE INDEX latest_by_model_and_release ON load_rows (model_id, release_name) WHERE is_latest = TRUE"
                : "CREATE INDEX latest_by_model_and_release ON load_rows (is_latest, model_id, release_name)");
    }

    private static void execute(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }
}
