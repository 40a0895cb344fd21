package dev.placementaudit.bench;

import dev.placementaudit.store.db.AuditDatabase;

/** The PostgreSQL the store benches write to ({@code PGURL}, {@code PGUSER}, {@code PGPASSWORD}), and a schema of it opened. */
record Postgres(String url, String user, String password) {
    AuditDatabase open(String schema, int poolSize) {
        return AuditDatabase.open(url, user, password, schema, poolSize);
    }
}
