package dev.placementaudit.bench;

import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.store.db.AuditDatabase;
import dev.placementaudit.store.db.LoadPartitions;
import dev.placementaudit.store.query.AuditQueries;
import dev.placementaudit.store.regression.GrowthRule;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.time.YearMonth;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.stream.Collectors;

/**
 * Query latency at scale: a schema filled by SQL with as many loads as the fleet mix leaves (a million by default), then
 * each question users ask timed after a warm-up, in the query API's own process ({@code bench/run.sh store --runs 0}).
 */
record QueryLatency(Postgres pg, long queryLoads, boolean keepSchema, boolean byDeployment) {

    /**
     * Fills a schema with {@code queryLoads} loads as the fleet mix leaves them (1,000 deployments of 4 kinds, 4 models,
     * 5 releases, 50 loads of each model per release and deployment; 80 plans of 146 tensors; each load compared with
     * the previous release, its chain entry), then times what users ask: a release diff, a release across the fleet,
     * a deployment's latest loads and one load's tensors. Returns the Markdown section.
     */
    String measure() throws Exception {
        String schema = "bench_query_" + Postgres.suffix();
        long perDeployment = 4 * 5 * 50;
        long deployments = Math.max(1, queryLoads / perDeployment);
        long count = deployments * perDeployment;
        String hex = "md5(%1$s) || md5('x' || %1$s)";
        try (AuditDatabase db = pg.open(schema, 4); Connection c = db.dataSource().getConnection();
             Statement s = c.createStatement()) {
            System.out.printf(Locale.ROOT, "filling %s with %,d loads of %,d deployments...%n", schema, count, deployments);
            long fill = System.nanoTime();
            FleetFill.plans(s);
            // A load's numbers: d deployment, r release (0..4), m model (0..3), n the load within them (0..49).
            String d = "(g / " + perDeployment + ")";
            String r = "((g % " + perDeployment + ") / 200)";
            String m = "((g % 200) / 50)";
            String n = "(g % 50)";
            String plan = "(" + m + " * 20 + (" + d + " % 4) * 5 + " + r + ")";
            String previousPlan = "(" + m + " * 20 + (" + d + " % 4) * 5 + " + r + " - 1)";
            String loadId = "md5('L' || g)::uuid::text";
            // Rows lie as a store appends them, in the order the loads happened (release, then minute, then deployment), or
            // with --query-layout deployment one deployment's after another's (no store ingests so: every release head on
            // a page of its own, the fleet view's worst case).
            String order = byDeployment ? "" : " ORDER BY " + r + ", " + n + ", " + d + ", g";
            String previousId = "md5('L' || (g - (g % 200) % 50 - 200 + 49))::uuid::text";
            FleetFill.sitesAndBuilds(s, deployments);
            // The month of its loads (November 2026), as a store that ran then made it.
            LoadPartitions.create(c, YearMonth.of(2026, 11));
            s.execute("INSERT INTO load_rows (load_id, deployment_id, release_name, model_id, site_key, build_key, occurred_at, tensor_count, "
                    + "stored_bytes, resident_bytes, heap_bytes, offheap_bytes, mapped_bytes, heap_tensors, offheap_tensors, mapped_tensors, "
                    + "resolved_at, complete, completed_at, summary_partition, summary_offset, plan_bytes, previous_load_id, previous_release, "
                    + "previous_plan_bytes, is_head, is_latest, chain_seq, chain_hash) SELECT " + loadId + ", 'device-' || " + d + ", 'r' || (" + r + " + 1), 'model-' || " + m + ", " + d
                    + ", " + m + " * 4 + " + d + " % 4, TIMESTAMP WITH TIME ZONE '2026-11-01 00:00:00+00' + "
                    + r + " * INTERVAL '1 day' + " + n + " * INTERVAL '1 minute' + " + d + " * INTERVAL '1 millisecond', 146, 86114304, 86114304, 0, "
                    + "CASE WHEN " + r + " > 0 THEN 88080384 ELSE 0 END, 86114304, 0, CASE WHEN " + r + " > 0 THEN 21 ELSE 0 END, 146, "
                    + "now(), TRUE, now(), (g % 3)::int, g, decode(" + String.format(hex, "'p' || " + plan) + ", 'hex'), CASE WHEN " + r
                    + " > 0 THEN " + previousId + " END, CASE WHEN " + r + " > 0 THEN 'r' || " + r + " END, CASE WHEN " + r + " > 0 THEN decode("
                    + String.format(hex, "'p' || " + previousPlan) + ", 'hex') END, g % 50 = 49, g % 50 = 49 AND " + r + " = 4, (g % " + perDeployment
                    + ") + 1, decode("
                    + String.format(hex, "'entry' || g") + ", 'hex') FROM generate_series(0, " + (count - 1) + ") g" + order);
            // Each id once, with its time, as the store writes it beside the row (V30).
            s.execute("INSERT INTO load_ids (load_id, occurred_at) SELECT load_id, occurred_at FROM load_rows");
            // Each load's chain entry on its row, as the store writes it (docs/adr/0015): its position and its hash; and
            // each deployment's head on its lock row.
            s.execute("INSERT INTO deployment_locks (deployment_id, chain_seq, chain_hash) SELECT 'device-' || d, " + perDeployment
                    + ", decode(md5('head' || d) || md5('head' || d), 'hex') FROM generate_series(0, " + (deployments - 1) + ") d");
            // A store holding a million loads has long been vacuumed by autovacuum: measure it settled, not while
            // autovacuum works through rows inserted a second ago.
            s.execute("VACUUM ANALYZE");
            // And its pages written out: a checkpoint spread over the measurements would be measured with them.
            s.execute("CHECKPOINT");
            double fillSeconds = (System.nanoTime() - fill) / 1e9;
            Map<String, Long> sizes = Postgres.sizes(c, schema);
            long total = sizes.values().stream().mapToLong(Long::longValue).sum();
            System.out.printf(Locale.ROOT, "filled in %.0f s: %s%n", fillSeconds, ByteSizes.format(total));
            AuditQueries queries = new AuditQueries(db.dataSource(), new GrowthRule("off-heap", 10, 1 << 20), new GrowthRule("heap", 10, 1 << 20));
            Random random = new Random(1);
            Map<String, double[]> latencies = new LinkedHashMap<>();
            latencies.put("diff (two releases of a deployment's model)", Latency.time(() -> {
                int release = 1 + random.nextInt(4);
                if (queries.diff("device-" + random.nextInt((int) deployments), "model-" + random.nextInt(4), "r" + release, "r" + (release + 1))
                        .isEmpty()) {
                    throw new IllegalStateException("no diff");
                }
            }));
            latencies.put("fleet (one release: " + deployments * 4 + " deployment-models, drift by plan, regressions)", Latency.time(() -> {
                if (queries.fleet("r" + (1 + random.nextInt(5))).deployments() == 0) {
                    throw new IllegalStateException("no fleet");
                }
            }));
            latencies.put("where --deployment (its 20 latest loads)", Latency.time(() -> {
                if (queries.loads("device-" + random.nextInt((int) deployments), null, null, 20).isEmpty()) {
                    throw new IllegalStateException("no loads");
                }
            }));
            latencies.put("where --load (one load's 146 tensors)", Latency.time(() -> {
                long g = (long) (random.nextDouble() * count);
                try (PreparedStatement q = c.prepareStatement("SELECT md5('L' || ?)::uuid::text")) {
                    q.setLong(1, g);
                    try (ResultSet rs = q.executeQuery()) {
                        rs.next();
                        if (queries.load(rs.getString(1)).orElseThrow().tensors().size() != 146) {
                            throw new IllegalStateException("not 146 tensors");
                        }
                    }
                }
            }));
            if (keepSchema) {
                System.out.printf(Locale.ROOT, "kept schema %s for inspection (--keep-schema): DROP SCHEMA %s CASCADE when done%n", schema, schema);
            } else {
                Postgres.drop(c, schema);
            }
            StringBuilder md = new StringBuilder();
            md.append(String.format(Locale.ROOT, "Queries with %,d loads stored (%,d deployments, 80 plans; rows " + (byDeployment ? "deployment by deployment" : "in the order the loads happened")
                    + "; filled by SQL and vacuumed in %.0f s): %s in all, "
                    + "**%.2f GB per million loads** (%s). Latency over " + Latency.MEASURED + " queries each after " + Latency.WARM_UP + " of warm-up (a fresh JVM "
                    + "compiles the query path over its first calls: their median is the last column), in the query API's own process "
                    + "(JDBC to the same PostgreSQL):%n%n| query | p50 ms | p95 ms | p99 ms | max ms | warm-up p50 ms |%n|---|---|---|---|---|---|%n", count,
                    deployments, fillSeconds, ByteSizes.format(total), total * 1e6 / count / 1e9, sizes.entrySet().stream()
                            .filter(e -> e.getValue() > 0).map(e -> e.getKey() + " " + ByteSizes.format(e.getValue())).collect(Collectors.joining(", "))));
            latencies.forEach((what, l) -> md.append(String.format(Locale.ROOT, "| %s | %.1f | %.1f | %.1f | %.1f | %.1f |%n", what, l[0], l[1], l[2],
                    l[3], l[4])));
            return md.toString();
        }
    }
}
