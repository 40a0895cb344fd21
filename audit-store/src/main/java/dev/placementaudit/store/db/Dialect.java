package dev.placementaudit.store.db;

import java.sql.Connection;
import java.sql.Driver;
import java.sql.SQLException;
import java.util.List;
import java.util.Properties;
import java.util.stream.Collectors;

/**
 * The one place the two databases differ for us: an idempotent insert. PostgreSQL has {@code ON CONFLICT DO
 * NOTHING} (concurrency-safe); H2 has none, so it gets the standard {@code MERGE ... WHEN NOT MATCHED}, which a
 * concurrent duplicate can still trip with SQLState 23505 - callers treat that as "already recorded".
 */
public enum Dialect {
    POSTGRESQL, H2;

    public static Dialect of(String jdbcUrl) {
        if (jdbcUrl.startsWith("jdbc:postgresql:")) {
            return POSTGRESQL;
        }
        if (jdbcUrl.startsWith("jdbc:h2:")) {
            return H2;
        }
        throw new IllegalArgumentException("unsupported database URL '" + jdbcUrl + "': use jdbc:postgresql:... or jdbc:h2:...");
    }

    /**
     * A connection through this database's own driver, not {@code DriverManager}: that one first loads and starts every
     * driver on the class path (PostgreSQL's brings up java.util.logging), about 10 ms a query command pays for nothing.
     */
    public Connection connect(String jdbcUrl, Properties properties) throws SQLException {
        Driver driver = this == POSTGRESQL ? new org.postgresql.Driver() : new org.h2.Driver();
        Connection c = driver.connect(jdbcUrl, properties);
        if (c == null) {
            throw new SQLException("the " + this + " driver does not take the URL " + jdbcUrl, "08001");
        }
        return c;
    }

    /** An insert that does nothing when a row with the same key exists. {@code types} are SQL types for the casts. */
    public String insertIgnoringDuplicates(String table, List<String> columns, List<String> types, String key) {
        return insertIgnoringDuplicates(table, columns, types, List.of(key));
    }

    /** The same, for a key of several columns. */
    public String insertIgnoringDuplicates(String table, List<String> columns, List<String> types, List<String> keys) {
        String cols = String.join(", ", columns);
        String params = types.stream().map(t -> "CAST(? AS " + t + ")").collect(Collectors.joining(", "));
        if (this == POSTGRESQL) {
            return "INSERT INTO " + table + " (" + cols + ") VALUES (" + params + ") ON CONFLICT (" + String.join(", ", keys) + ") DO NOTHING";
        }
        String values = columns.stream().map(c -> "s." + c).collect(Collectors.joining(", "));
        String on = keys.stream().map(k -> "t." + k + " = s." + k).collect(Collectors.joining(" AND "));
        return "MERGE INTO " + table + " AS t USING (VALUES (" + params + ")) AS s(" + cols + ") ON " + on
                + " WHEN NOT MATCHED THEN INSERT (" + cols + ") VALUES (" + values + ")";
    }

    /** An insert-or-update on the given key columns, in standard MERGE, which both run. */
    public String upsert(String table, List<String> columns, List<String> types, List<String> keys) {
        String cols = String.join(", ", columns);
        String params = types.stream().map(t -> "CAST(? AS " + t + ")").collect(Collectors.joining(", "));
        String on = keys.stream().map(k -> "t." + k + " = s." + k).collect(Collectors.joining(" AND "));
        String set = columns.stream().filter(c -> !keys.contains(c)).map(c -> c + " = s." + c).collect(Collectors.joining(", "));
        String values = columns.stream().map(c -> "s." + c).collect(Collectors.joining(", "));
        return "MERGE INTO " + table + " AS t USING (VALUES (" + params + ")) AS s(" + cols + ") ON " + on
                + " WHEN MATCHED THEN UPDATE SET " + set + " WHEN NOT MATCHED THEN INSERT (" + cols + ") VALUES (" + values + ")";
    }

    public static boolean isDuplicateKey(SQLException e) {
        for (SQLException s = e; s != null; s = s.getNextException()) {
            if ("23505".equals(s.getSQLState())) {
                return true;
            }
        }
        return false;
    }
}
