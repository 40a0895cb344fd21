package db.migration;

import org.flywaydb.core.api.migration.BaseJavaMigration;
import org.flywaydb.core.api.migration.Context;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;

/**
 * Three lookups whose cost grew with the store (issue 55; {@code bench/run.sh store --grow}, docs/benchmarks.md):
 * <ul>
 *   <li>whether a deployment's head of a model is its latest (an incident's exposure, the gate): the heads were
 *       indexed by deployment alone, so each probe read every head of the deployment, one per model and release: a
 *       year of releases made it tens of times slower. Now by deployment, model and log position (heads only, on
 *       PostgreSQL);</li>
 *   <li>a deployment's chain from a position on ({@code store verify} since its last marks, {@code store prune}'s
 *       chain start): the entries were found through the deployment's loads in log order and sorted, reading all of a
 *       deployment's loads for the few new ones; and its complete loads that have no link. Now by deployment and position;</li>
 *   <li>a deployment's latest loads ({@code store where --deployment}, the dashboard), its loads before a time
 *       ({@code store prune}) and a tensor's history: all of a deployment's loads were read and sorted by time for 20
 *       of them (33 ms at 3 million loads). Now by deployment and time.</li>
 * </ul>
 */
public class V26__heads_and_chains_by_deployment extends BaseJavaMigration {
    @Override
    public void migrate(Context context) throws Exception {
        Connection c = context.getConnection();
        boolean postgres = c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT).contains("postgres");
        execute(c, "DROP INDEX release_heads_by_deployment");
        execute(c, postgres
                ? "CREATE INDEX release_heads_by_deployment ON load_rows (deployment_id, model_id, summary_partition, summary_offset) WHERE is_head = TRUE"
                : "CREATE INDEX release_heads_by_deployment ON load_rows (is_head, deployment_id, model_id, summary_partition, summary_offset)");
        // Every row, not the chained ones alone: the few complete loads with no link are looked up by it too.
        execute(c, "CREATE INDEX chain_by_deployment ON load_rows (deployment_id, chain_seq)");
        execute(c, "CREATE INDEX loads_by_deployment_and_time ON load_rows (deployment_id, occurred_at)");
    }

    private static void execute(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }
}
