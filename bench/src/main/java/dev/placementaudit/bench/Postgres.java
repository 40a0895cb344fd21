package dev.placementaudit.bench;

import dev.placementaudit.store.db.AuditDatabase;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

/**
 * The PostgreSQL the store benches write to, from libpq's variables ({@code PGHOST}, {@code PGPORT}, {@code PGDATABASE},
 * {@code PGUSER}, {@code PGPASSWORD}; 127.0.0.1:5432/test as postgres without them), and a schema of it opened.
 */
record Postgres(String url, String user, String password) {
    static Postgres fromEnvironment() {
        return new Postgres("jdbc:postgresql://" + env("PGHOST", "127.0.0.1") + ":" + env("PGPORT", "5432") + "/" + env("PGDATABASE", "test"),
                env("PGUSER", "postgres"), env("PGPASSWORD", ""));
    }

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isBlank() ? fallback : value;
    }

    AuditDatabase open(String schema, int poolSize) {
        return AuditDatabase.open(url, user, password, schema, poolSize);
    }

    /** Bytes per table of the schema, indexes and TOAST included (pg_total_relation_size), largest first. */
    static Map<String, Long> sizes(Connection c, String schema) throws SQLException {
        Map<String, Long> sizes = new LinkedHashMap<>();
        try (PreparedStatement s = c.prepareStatement("SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n "
                + "ON n.oid = c.relnamespace WHERE n.nspname = ? AND c.relkind = 'r' ORDER BY 2 DESC")) {
            s.setString(1, schema);
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    sizes.put(rs.getString(1), rs.getLong(2));
                }
            }
        }
        return sizes;
    }

    static void drop(Connection c, String schema) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute("DROP SCHEMA " + schema + " CASCADE");
        }
    }

    /** Eight random characters, for a schema of one run. */
    static String suffix() {
        return UUID.randomUUID().toString().replace("-", "").substring(0, 8);
    }
}
