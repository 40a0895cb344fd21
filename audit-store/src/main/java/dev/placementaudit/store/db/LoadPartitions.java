package dev.placementaudit.store.db;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.YearMonth;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The partitions of {@code load_rows} on PostgreSQL (docs/adr/0024): one a month by the load's time
 * ({@code occurred_at}, UTC months), a {@code DEFAULT} partition for a load no month holds (a clock far ahead, or a
 * month already pruned), and, on a store brought over from before V27, the table it had as the partition of everything
 * before its first month. The store creates months ahead of time ({@link #ensureAhead}); {@code store prune} drops a
 * month whole once it is past the cutoff. H2 keeps one table: {@link #partitioned} is false there.
 */
public final class LoadPartitions {
    /** How many months after the current one exist at any time. */
    public static final int MONTHS_AHEAD = 2;
    private static final long LOCK = 0x5041_4c52L; // "PALR": one store instance changes the partitions at a time

    /**
     * One partition and the range of load times it holds: {@code from} null for "everything before {@code to}";
     * both null for the default partition.
     */
    public record Partition(String name, Instant from, Instant to) {
        public boolean isDefault() {
            return from == null && to == null;
        }

        /** Whether every load it can hold occurred before {@code cutoff}. */
        public boolean before(Instant cutoff) {
            return to != null && !to.isAfter(cutoff);
        }

        public boolean holds(Instant occurredAt) {
            return to != null && occurredAt.isBefore(to) && (from == null || !occurredAt.isBefore(from));
        }
    }

    private LoadPartitions() {
    }

    /** A month's partition: {@code load_rows_2026_12}. */
    public static String name(YearMonth month) {
        return String.format(Locale.ROOT, "load_rows_%04d_%02d", month.getYear(), month.getMonthValue());
    }

    /** Where a month begins, in UTC: its partition's lower bound, and the previous month's upper one. */
    public static Instant start(YearMonth month) {
        return month.atDay(1).atStartOfDay(ZoneOffset.UTC).toInstant();
    }

    public static boolean partitioned(Connection c) throws SQLException {
        if (!c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT).contains("postgres")) {
            return false;
        }
        try (PreparedStatement s = c.prepareStatement("SELECT 1 FROM pg_partitioned_table p JOIN pg_class t ON t.oid = p.partrelid "
                + "WHERE t.relname = 'load_rows' AND t.relnamespace = current_schema()::regnamespace"); ResultSet rs = s.executeQuery()) {
            return rs.next();
        }
    }

    /** The partitions, oldest first, the default last; empty where {@code load_rows} is not partitioned. */
    public static List<Partition> list(Connection c) throws SQLException {
        List<Partition> partitions = new ArrayList<>();
        if (!partitioned(c)) {
            return partitions;
        }
        // The bounds as PostgreSQL prints them: FOR VALUES FROM ('...') TO ('...'), MINVALUE unquoted, or DEFAULT.
        try (PreparedStatement s = c.prepareStatement("SELECT p.relname, (b)[1], (b)[2] FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid "
                + "LEFT JOIN LATERAL regexp_match(pg_get_expr(p.relpartbound, p.oid), 'FROM \\((.*)\\) TO \\((.*)\\)') b ON TRUE "
                + "WHERE i.inhparent = (current_schema() || '.load_rows')::regclass"); ResultSet rs = s.executeQuery()) {
            while (rs.next()) {
                partitions.add(new Partition(rs.getString(1), bound(c, rs.getString(2)), bound(c, rs.getString(3))));
            }
        }
        partitions.sort((a, b) -> a.isDefault() != b.isDefault() ? (a.isDefault() ? 1 : -1)
                : a.to().compareTo(b.to()));
        return partitions;
    }

    private static Instant bound(Connection c, String literal) throws SQLException {
        if (literal == null || literal.equals("MINVALUE") || literal.equals("MAXVALUE")) {
            return null;
        }
        try (PreparedStatement s = c.prepareStatement("SELECT CAST(? AS TIMESTAMP WITH TIME ZONE)")) {
            s.setString(1, literal.replace("'", ""));
            try (ResultSet rs = s.executeQuery()) {
                rs.next();
                return rs.getTimestamp(1).toInstant();
            }
        }
    }

    /**
     * Makes sure the month of {@code now} and the {@link #MONTHS_AHEAD} after it have partitions; returns those it
     * created. Loads the default partition already holds for such a month move into it. Does nothing where
     * {@code load_rows} is not partitioned. Runs in its own transaction.
     */
    public static List<String> ensureAhead(Connection c, Instant now) throws SQLException {
        List<String> created = new ArrayList<>();
        if (!partitioned(c)) {
            return created;
        }
        YearMonth first = YearMonth.from(now.atZone(ZoneOffset.UTC));
        for (int i = 0; i <= MONTHS_AHEAD; i++) {
            String name = create(c, first.plusMonths(i));
            if (name != null) {
                created.add(name);
            }
        }
        return created;
    }

    /**
     * The partition of a month, created unless a partition already holds some of its time (a month, or the table
     * brought over from before V27); returns its name when it created it, else null.
     */
    public static String create(Connection c, YearMonth month) throws SQLException {
        Instant from = start(month);
        Instant to = start(month.plusMonths(1));
        boolean auto = c.getAutoCommit();
        c.setAutoCommit(false);
        try {
            try (PreparedStatement lock = c.prepareStatement("SELECT pg_advisory_xact_lock(?)")) {
                lock.setLong(1, LOCK);
                lock.execute();
            }
            for (Partition p : list(c)) {
                if (!p.isDefault() && p.to().isAfter(from) && (p.from() == null || p.from().isBefore(to))) {
                    c.rollback();
                    return null;
                }
            }
            String name = name(month);
            String range = "FROM ('" + from + "') TO ('" + to + "')";
            try (Statement s = c.createStatement()) {
                // A partition cannot be made of loads the default one holds: they move in with it (the default is small).
                s.execute("CREATE TABLE " + name + " (LIKE load_rows INCLUDING DEFAULTS INCLUDING CONSTRAINTS)");
                s.execute("WITH moved AS (DELETE FROM load_rows_default WHERE occurred_at >= '" + from + "' AND occurred_at < '" + to
                        + "' RETURNING *) INSERT INTO " + name + " SELECT * FROM moved");
                s.execute("ALTER TABLE load_rows ATTACH PARTITION " + name + " FOR VALUES " + range);
            }
            c.commit();
            return name;
        } catch (SQLException | RuntimeException e) {
            c.rollback();
            throw e;
        } finally {
            c.setAutoCommit(auto);
        }
    }
}
