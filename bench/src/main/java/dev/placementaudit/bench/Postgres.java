package dev.placementaudit.bench;

import dev.placementaudit.store.db.AuditDatabase;

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
}
