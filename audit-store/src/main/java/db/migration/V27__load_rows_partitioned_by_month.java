package db.migration;

import dev.placementaudit.store.db.LoadPartitions;
import org.flywaydb.core.api.migration.BaseJavaMigration;
import org.flywaydb.core.api.migration.Context;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.YearMonth;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code load_rows} partitioned by month of the load's time on PostgreSQL (issue 55, docs/adr/0024), so that
 * {@code store prune} drops a month whole instead of deleting its rows one by one. H2 keeps one table.
 *
 * <p>Nothing is copied: the table as it was becomes the partition of every load before its first month (the month
 * after its latest load, or after now), checked by a constraint first so that attaching it reads it once and writes
 * nothing (an empty table is dropped instead: the months start with the current one). What is built: its primary key, now of the load id and time (a partitioned table's keys hold its partition
 * key); the parent's indexes are the table's own, which it keeps. The views over the table are redefined on the parent
 * with the text they had. The months from there on, and a default partition, are created empty.
 */
public class V27__load_rows_partitioned_by_month extends BaseJavaMigration {
    @Override
    public void migrate(Context context) throws Exception {
        Connection c = context.getConnection();
        if (!c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT).contains("postgres") || LoadPartitions.partitioned(c)) {
            return;
        }
        // What is defined on the table now, read before it is renamed (the text names load_rows, which the parent becomes).
        Map<String, String> views = texts(c, "SELECT DISTINCT v.relname, pg_get_viewdef(v.oid) FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid "
                + "JOIN pg_class v ON v.oid = r.ev_class WHERE d.refobjid = (current_schema() || '.load_rows')::regclass AND v.relname <> 'load_rows'");
        Map<String, String> indexes = texts(c, "SELECT i.indexname, i.indexdef FROM pg_indexes i WHERE i.schemaname = current_schema() "
                + "AND i.tablename = 'load_rows' AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conname = i.indexname "
                + "AND k.connamespace = current_schema()::regnamespace AND k.contype = 'p')");
        String primaryKey = texts(c, "SELECT conname, conname FROM pg_constraint WHERE conrelid = (current_schema() || '.load_rows')::regclass "
                + "AND contype = 'p'").keySet().iterator().next();

        // Every lock it needs, first and in one order: views before their table, as a query takes them. Taken as it goes,
        // a query reading a view while the table was renamed deadlocked with the migration (StoreCrashTest).
        execute(c, "LOCK TABLE " + String.join(", ", views.keySet()) + (views.isEmpty() ? "" : ", ") + "load_rows IN ACCESS EXCLUSIVE MODE");
        // Its latest load read under the lock: no load written meanwhile can fall past the bound.
        Instant latest = one(c, "SELECT MAX(occurred_at) FROM load_rows");
        YearMonth now = YearMonth.now(ZoneOffset.UTC);
        YearMonth first = latest == null ? now : max(now, YearMonth.from(latest.atZone(ZoneOffset.UTC))).plusMonths(1);
        Instant bound = LoadPartitions.start(first);
        String legacy = String.format(Locale.ROOT, "load_rows_before_%04d_%02d", first.getYear(), first.getMonthValue());
        execute(c, "ALTER TABLE load_rows RENAME TO " + legacy);
        for (String index : indexes.keySet()) {
            execute(c, "ALTER INDEX " + index + " RENAME TO " + index + "_v26");
        }
        execute(c, "ALTER TABLE " + legacy + " DROP CONSTRAINT " + primaryKey);
        execute(c, "ALTER TABLE " + legacy + " ADD CONSTRAINT " + legacy + "_pkey PRIMARY KEY (load_id, occurred_at)");
        execute(c, "CREATE TABLE load_rows (LIKE " + legacy + " INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (occurred_at)");
        execute(c, "ALTER TABLE load_rows ADD CONSTRAINT load_rows_pkey PRIMARY KEY (load_id, occurred_at)");
        for (String definition : indexes.values()) {
            execute(c, definition);
        }
        for (Map.Entry<String, String> view : views.entrySet()) {
            execute(c, "CREATE OR REPLACE VIEW " + view.getKey() + " AS " + view.getValue());
        }
        if (latest == null) {
            // An empty store has no history to keep: its months start now; an older load lands in the default partition.
            execute(c, "DROP TABLE " + legacy);
        } else {
            // The check lets the attach skip its own scan; it has no use once the partition's bound says the same.
            execute(c, "ALTER TABLE " + legacy + " ADD CONSTRAINT " + legacy + "_bound CHECK (occurred_at IS NOT NULL AND occurred_at < '" + bound + "')");
            execute(c, "ALTER TABLE load_rows ATTACH PARTITION " + legacy + " FOR VALUES FROM (MINVALUE) TO ('" + bound + "')");
            execute(c, "ALTER TABLE " + legacy + " DROP CONSTRAINT " + legacy + "_bound");
        }
        execute(c, "CREATE TABLE load_rows_default PARTITION OF load_rows DEFAULT");
        for (int i = 0; i <= LoadPartitions.MONTHS_AHEAD; i++) {
            YearMonth month = first.plusMonths(i);
            execute(c, "CREATE TABLE " + LoadPartitions.name(month) + " PARTITION OF load_rows FOR VALUES FROM ('" + LoadPartitions.start(month)
                    + "') TO ('" + LoadPartitions.start(month.plusMonths(1)) + "')");
        }
    }

    private static YearMonth max(YearMonth a, YearMonth b) {
        return a.isAfter(b) ? a : b;
    }

    private static Instant one(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getTimestamp(1) == null ? null : rs.getTimestamp(1).toInstant();
        }
    }

    private static Map<String, String> texts(Connection c, String sql) throws SQLException {
        Map<String, String> texts = new LinkedHashMap<>();
        try (PreparedStatement s = c.prepareStatement(sql); ResultSet rs = s.executeQuery()) {
            while (rs.next()) {
                texts.put(rs.getString(1), rs.getString(2));
            }
        }
        return texts;
    }

    private static void execute(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }
}
