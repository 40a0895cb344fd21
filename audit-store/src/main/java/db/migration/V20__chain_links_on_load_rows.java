package db.migration;

import org.flywaydb.core.api.migration.BaseJavaMigration;
import org.flywaydb.core.api.migration.Context;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;

/**
 * A load's link in its deployment's hash chain is kept on the load's row (docs/adr/0015): {@code load_rows} gains
 * {@code chain_seq} and {@code chain_hash} (the entry's position and hash), and the deployment's lock row the chain's
 * head ({@code chain_seq}, {@code chain_hash}, {@code chain_load_id}), which the transaction appending to it holds
 * locked anyway. An entry in a table of its own repeated its load's id and deployment and had an index of its own
 * (219 bytes a load at the fleet mix, a fifth of the store); on the row it costs its 8-byte position and 32-byte hash.
 * The load's hash is no longer stored: like the previous hash and the plan digest since V11, verification derives it
 * from the row.
 *
 * <p>Entries chained before stay where they are, in {@code chain_entries_legacy}, as they were written (they may hold
 * what later entries derive, and encoding-1 ones cover decisions): nothing is rewritten, so the migration is a few
 * statements whatever the store's size. {@code chain_entries} becomes a view of both with the table's columns, so
 * verification, the rebuild's comparison and every reader see one chain; a chain goes on from its last legacy entry,
 * whose position and hash its deployment's lock row takes here.
 */
public class V20__chain_links_on_load_rows extends BaseJavaMigration {
    @Override
    public void migrate(Context context) throws Exception {
        Connection c = context.getConnection();
        boolean postgres = c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT).contains("postgres");
        String bytes = postgres ? "BYTEA" : "VARBINARY(32)";
        execute(c, "ALTER TABLE load_rows ADD COLUMN chain_seq BIGINT");
        execute(c, "ALTER TABLE load_rows ADD COLUMN chain_hash " + bytes);
        execute(c, "ALTER TABLE deployment_locks ADD COLUMN chain_seq BIGINT");
        execute(c, "ALTER TABLE deployment_locks ADD COLUMN chain_hash " + bytes);
        execute(c, "ALTER TABLE deployment_locks ADD COLUMN chain_load_id VARCHAR(36)");
        execute(c, "ALTER TABLE chain_entries RENAME TO chain_entries_legacy");
        // Each chain's head, from its last legacy entry (a chain pruned to nothing goes on from its anchor).
        execute(c, "INSERT INTO deployment_locks (deployment_id) SELECT DISTINCT e.deployment_id FROM chain_entries_legacy e "
                + "WHERE NOT EXISTS (SELECT 1 FROM deployment_locks k WHERE k.deployment_id = e.deployment_id)");
        String last = "FROM chain_entries_legacy e WHERE e.deployment_id = deployment_locks.deployment_id AND e.seq = (SELECT MAX(m.seq) "
                + "FROM chain_entries_legacy m WHERE m.deployment_id = deployment_locks.deployment_id)";
        execute(c, "UPDATE deployment_locks SET chain_seq = (SELECT e.seq " + last + "), chain_hash = (SELECT e.entry_hash " + last
                + "), chain_load_id = (SELECT e.load_id " + last + ") WHERE EXISTS (SELECT 1 FROM chain_entries_legacy e "
                + "WHERE e.deployment_id = deployment_locks.deployment_id)");
        execute(c, """
                CREATE VIEW chain_entries AS
                SELECT deployment_id, seq, load_id, prev_hash, load_hash, decisions_hash, entry_hash, encoding FROM chain_entries_legacy
                UNION ALL
                SELECT deployment_id, chain_seq, load_id, CAST(NULL AS %1$s), CAST(NULL AS %1$s), CAST(NULL AS %1$s), chain_hash, 2
                FROM load_rows WHERE chain_seq IS NOT NULL""".formatted(bytes));
    }

    private static void execute(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }
}
