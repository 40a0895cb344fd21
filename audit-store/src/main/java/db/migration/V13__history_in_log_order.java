package db.migration;

import org.flywaydb.core.api.migration.BaseJavaMigration;
import org.flywaydb.core.api.migration.Context;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;

/**
 * A deployment's history is ordered by the log, not by the times its events carry (docs/adr/0006): a load's position is
 * where its summary stands in {@code load-resolved} ({@code summary_partition}, {@code summary_offset}), which is the
 * order its {@code ModelLoaded} was published in, and a load completes only after every load before it of its
 * deployment has completed or can no longer complete. What that needs:
 * <ul>
 * <li>{@code loads.source_offset}: the load's offset in {@code model-loads}, which its decisions carry too. With
 *     {@code deployment_locks.decided_through}, the highest such offset of any decision of the deployment seen so far,
 *     it tells a load whose decisions are still to come (it holds the loads after it) from one whose decisions have
 *     all gone by and that will never complete (it holds nothing). NULL in rows stored before: those hold nothing.</li>
 * <li>The history index orders by position instead of event time, for "the latest complete load before this one".</li>
 * <li>The loads not complete, by deployment, found without reading every load of it: on PostgreSQL a partial index
 *     (it holds only the few waiting loads); H2 has none, so a plain one.</li>
 * <li>{@code release_heads} keep their load's position, so a head moves only to a load later in the log.</li>
 * <li>{@code alerts.claimed_by} and {@code claimed_until}: the lease an instance takes on unpublished alerts before it
 *     publishes them, so that of several live instances one publishes each alert.</li>
 * </ul>
 */
public class V13__history_in_log_order extends BaseJavaMigration {

    @Override
    public void migrate(Context context) throws Exception {
        Connection c = context.getConnection();
        boolean postgres = c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT).contains("postgres");
        execute(c, "ALTER TABLE loads ADD COLUMN source_offset BIGINT");
        execute(c, "ALTER TABLE deployment_locks ADD COLUMN decided_through BIGINT");
        execute(c, "DROP INDEX loads_history");
        execute(c, "CREATE INDEX loads_history ON loads (deployment_id, model_id, complete, summary_partition, summary_offset)");
        execute(c, postgres ? "CREATE INDEX loads_waiting ON loads (deployment_id) WHERE complete = FALSE"
                : "CREATE INDEX loads_waiting ON loads (deployment_id, complete)");
        execute(c, "ALTER TABLE release_heads ADD COLUMN summary_partition INTEGER");
        execute(c, "ALTER TABLE release_heads ADD COLUMN summary_offset BIGINT");
        execute(c, "UPDATE release_heads SET summary_partition = (SELECT l.summary_partition FROM loads l WHERE l.load_id = release_heads.load_id), "
                + "summary_offset = (SELECT l.summary_offset FROM loads l WHERE l.load_id = release_heads.load_id)");
        execute(c, "ALTER TABLE alerts ADD COLUMN claimed_by VARCHAR(36)");
        execute(c, "ALTER TABLE alerts ADD COLUMN claimed_until TIMESTAMP WITH TIME ZONE");
    }

    private static void execute(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }
}
