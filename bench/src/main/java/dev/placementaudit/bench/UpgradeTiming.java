package dev.placementaudit.bench;

import dev.placementaudit.store.db.AuditDatabase;
import org.flywaydb.core.Flyway;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.Locale;

/**
 * How long a store takes to open a million loads written by the schema before V17 (the migration that moved each load's
 * site and build to tables of their own, ADR 13): the loads filled by SQL at V16, then the store opened as an upgraded
 * instance opens it, migrating as it starts. What an operator plans an upgrade's downtime with.
 */
record UpgradeTiming(Postgres pg, long loads) {
    String measure() throws Exception {
        String schema = "bench_upgrade_" + Postgres.suffix();
        Flyway.configure().dataSource(pg.url(), pg.user(), pg.password()).schemas(schema).defaultSchema(schema).createSchemas(true)
                .locations("classpath:db/migration").target("16").load().migrate();
        long deployments = Math.max(1, loads / 1000);
        String hex = "md5(%1$s) || md5('x' || %1$s)";
        try (Connection c = DriverManager.getConnection(pg.url(), pg.user(), pg.password()); Statement s = c.createStatement()) {
            s.execute("SET search_path TO " + schema);
            // Deployment d = g / 1000 (its own host), model m = g % 4, release g % 1000 / 200: the context repeats as at the fleet mix.
            s.execute("INSERT INTO loads (load_id, deployment_id, cluster, host, release_name, model_id, model_name, model_sha256, platform_name, "
                    + "profile_name, occurred_at, tensor_count, stored_bytes, resident_bytes, heap_bytes, offheap_bytes, mapped_bytes, heap_tensors, "
                    + "offheap_tensors, mapped_tensors, resolver_version, policy_digest, resolved_at, complete, completed_at, summary_partition, "
                    + "summary_offset, plan_digest) SELECT md5('L' || g)::uuid::text, 'device-' || (g / 1000), 'eu-west-1', 'host-' || (g / 1000), "
                    + "'r' || (g % 1000 / 200), 'model-' || (g % 4), 'Model ' || (g % 4), " + String.format(hex, "'sha' || (g % 4)") + ", "
                    + "(ARRAY['android','native','jvm','browser'])[(g / 1000) % 4 + 1], 'edge', now(), 146, 86114304, 86114304, 0, 0, 86114304, "
                    + "0, 0, 146, 'bench/skainet-1192', " + String.format(hex, "'policy'") + ", now(), TRUE, now(), g % 3, g, "
                    + String.format(hex, "'p' || (g % 80)") + " FROM generate_series(0, " + (deployments * 1000 - 1) + ") g");
            s.execute("VACUUM ANALYZE");
        }
        long started = System.nanoTime();
        try (AuditDatabase ignored = pg.open(schema, 2)) {
            double seconds = (System.nanoTime() - started) / 1e9;
            return String.format(Locale.ROOT, "Upgrade: a store of %,d loads (%,d deployments) written at schema version 16 opened by this "
                    + "version in **%.1f s**, migrations included (V17 copies every load row to `load_rows` and its site and build to "
                    + "`load_sites` and `load_builds`, V18 marks the release heads on them, V19 copies the rows again with their plans' "
                    + "digests as bytes, V20 adds the chain's columns to them and makes its table a view, V21 has incidents name plans by their "
                    + "bytes).%n", deployments * 1000, deployments, seconds);
        } finally {
            try (Connection c = DriverManager.getConnection(pg.url(), pg.user(), pg.password())) {
                Postgres.drop(c, schema);
            }
        }
    }
}
