package db.migration;

import org.flywaydb.core.api.migration.BaseJavaMigration;
import org.flywaydb.core.api.migration.Context;

import java.sql.Connection;
import java.sql.Statement;
import java.util.Locale;

/**
 * A row of {@code incident_deployments} is updated as its deployment's loads come (loads, bytes, last seen), about one
 * update for every two rows at the fleet mix, and each update left a dead copy of the row and a new entry in both its
 * indexes: half the table's size was dead versions. On PostgreSQL its pages now keep a quarter free, so an update that
 * changes no indexed column (whether the deployment still shows the incident rarely changes) stays on its page as a
 * heap-only tuple, which the page reclaims by itself, and touches no index. Pages written before keep their fill until
 * rewritten. H2 has no such setting and needs none (the embedded store is small).
 */
public class V20__incident_deployments_updated_in_place extends BaseJavaMigration {
    @Override
    public void migrate(Context context) throws Exception {
        Connection c = context.getConnection();
        if (c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT).contains("postgres")) {
            try (Statement s = c.createStatement()) {
                s.execute("ALTER TABLE incident_deployments SET (fillfactor = 75)");
            }
        }
    }
}
