package dev.placementaudit.store.retention;

import dev.placementaudit.store.db.LoadPartitions;

import java.io.PrintWriter;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import javax.sql.DataSource;

/**
 * The months of {@code load_rows} a prune drops whole (PostgreSQL, docs/adr/0024): every load in them occurred before
 * the cutoff. The prune plans each deployment as ever; the loads it drops that lie in such a month are only noted
 * ({@link #take}). At the end, in the same transaction, each month: the rows that hang on its dropped loads go in one
 * statement a table, the month is detached, the loads it holds that the prune keeps (the latest of a deployment and
 * model, the one it was compared with, a chain's entries after its new anchor, a load written meanwhile) move to the
 * default partition, and the month's table is dropped: no row of it is deleted, so none is left dead.
 */
final class WholeMonths {
    /** The tables whose rows name a load (table, column), emptied of a load's rows when it goes. */
    static final List<String[]> DEPENDENTS = List.of(new String[]{"decisions", "load_id"}, new String[]{"alerts", "to_load_id"},
            new String[]{"dead_letters", "load_id"},
            // What runtimes said of these loads goes with them; the incidents they fed keep their rows, as regressions' do.
            new String[]{"load_observations", "load_id"}, new String[]{"load_divergences", "load_id"}, new String[]{"runtime_findings", "load_id"},
            // Its id, which kept it unique (V30).
            new String[]{"load_ids", "load_id"});
    /** What a prune leaves dead rows in, vacuumed after it. */
    private static final List<String> VACUUMED = List.of("decisions", "alerts", "dead_letters", "load_observations", "load_divergences",
            "runtime_findings", "load_rows", "load_ids", "chain_entries_legacy", "chain_anchors", "plans", "plan_tensor_arrays");

    private final List<LoadPartitions.Partition> months;
    private final Set<String> taken = new HashSet<>();
    private final List<List<String>> remarks = new ArrayList<>();
    private final List<String> dropped = new ArrayList<>();

    WholeMonths(List<LoadPartitions.Partition> months) {
        this.months = List.copyOf(months);
    }

    /** Whether a load the prune drops lies in a month dropped whole (then it goes with the month, not by its row). */
    boolean take(String loadId, Instant occurredAt) {
        for (LoadPartitions.Partition month : months) {
            if (month.holds(occurredAt)) {
                taken.add(loadId);
                return true;
            }
        }
        return false;
    }

    /** Releases (deployment, model, release) whose head went, marked again once the months are gone. */
    void remarkAfter(List<List<String>> releases) {
        remarks.addAll(releases);
    }

    List<String> dropped() {
        return List.copyOf(dropped);
    }

    void drop(Connection c, PrintWriter progress) throws SQLException {
        String columns = String.join(", ", columns(c));
        for (LoadPartitions.Partition month : months) {
            try (Statement s = c.createStatement()) {
                // No load lands in it from here on until it is gone (a load the store writes meanwhile waits, then goes to the
                // default partition); reading it still works.
                s.execute("LOCK TABLE " + month.name() + " IN EXCLUSIVE MODE");
            }
            List<String> kept = new ArrayList<>();
            int rows = 0;
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT load_id FROM " + month.name())) {
                while (rs.next()) {
                    rows++;
                    if (!taken.contains(rs.getString(1))) {
                        kept.add(rs.getString(1));
                    }
                }
            }
            Array keptIds = c.createArrayOf("varchar", kept.toArray());
            for (String[] dependent : DEPENDENTS) {
                try (PreparedStatement s = c.prepareStatement("DELETE FROM " + dependent[0] + " WHERE " + dependent[1] + " IN (SELECT load_id FROM "
                        + month.name() + " WHERE NOT (load_id = ANY (?)))")) {
                    s.setArray(1, keptIds);
                    s.executeUpdate();
                }
            }
            try (Statement s = c.createStatement()) {
                s.execute("ALTER TABLE load_rows DETACH PARTITION " + month.name());
            }
            try (PreparedStatement s = c.prepareStatement("INSERT INTO load_rows (" + columns + ") SELECT " + columns + " FROM " + month.name()
                    + " WHERE load_id = ANY (?)")) {
                s.setArray(1, keptIds);
                s.executeUpdate();
            }
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE " + month.name());
            }
            dropped.add(month.name());
            progress.printf(Locale.ROOT, "  %s: dropped whole, %d loads (%d kept, moved to load_rows_default)%n", month.name(), rows, kept.size());
            progress.flush();
        }
        long marking = System.nanoTime();
        List<List<String>> left = left(c, remarks);
        Retention.remark(c, left);
        progress.printf(Locale.ROOT, "  %d of the %d releases whose head went have loads left, marked again in %.1f s%n", left.size(), remarks.size(),
                (System.nanoTime() - marking) / 1e9);
    }

    /**
     * Of the releases whose head went, those with a complete load left to mark: a release the months took whole (most of
     * them) has none, and is not looked at per deployment (a query each: a minute for the 12,000 releases of a month
     * of a 1,000-deployment fleet). One query a release name instead.
     */
    private static List<List<String>> left(Connection c, List<List<String>> releases) throws SQLException {
        Map<String, Set<List<String>>> byRelease = new HashMap<>();
        releases.forEach(r -> byRelease.computeIfAbsent(r.get(2), k -> new HashSet<>()).add(r));
        List<List<String>> left = new ArrayList<>();
        for (Map.Entry<String, Set<List<String>>> release : byRelease.entrySet()) {
            try (PreparedStatement s = c.prepareStatement("SELECT DISTINCT deployment_id, model_id FROM load_rows WHERE release_name = ? "
                    + "AND complete = TRUE")) {
                s.setString(1, release.getKey());
                try (ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        List<String> r = List.of(rs.getString(1), rs.getString(2), release.getKey());
                        if (release.getValue().contains(r)) {
                            left.add(r);
                        }
                    }
                }
            }
        }
        return left;
    }

    private static List<String> columns(Connection c) throws SQLException {
        List<String> columns = new ArrayList<>();
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT column_name FROM information_schema.columns "
                + "WHERE table_schema = current_schema() AND table_name = 'load_rows' ORDER BY ordinal_position")) {
            while (rs.next()) {
                columns.add(rs.getString(1));
            }
        }
        return columns;
    }

    /**
     * What the prune deleted by row leaves dead until the next autovacuum: vacuumed now, so that a prune leaves no bloat
     * behind it. Outside any transaction, as VACUUM must be. A failure is reported, not fatal: the prune is done.
     */
    static void vacuum(DataSource database, PrintWriter progress) {
        try (Connection c = database.getConnection(); Statement s = c.createStatement()) {
            c.setAutoCommit(true);
            s.execute("VACUUM (ANALYZE) " + String.join(", ", VACUUMED));
        } catch (SQLException e) {
            progress.printf(Locale.ROOT, "  (could not vacuum after the prune: %s; autovacuum will)%n", e.getMessage());
        }
    }
}
