package dev.placementaudit.bench;

import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.store.chain.ChainHead;
import dev.placementaudit.store.chain.ChainLog;
import dev.placementaudit.store.chain.ChainVerifier;
import dev.placementaudit.store.chain.HashChain;
import dev.placementaudit.store.chain.VerificationMarks;
import dev.placementaudit.store.db.AuditDatabase;
import dev.placementaudit.store.db.Sql;
import dev.placementaudit.store.incidents.Incidents;
import dev.placementaudit.store.query.AuditQueries;
import dev.placementaudit.store.regression.GrowthRule;
import dev.placementaudit.store.retention.Retention;
import dev.placementaudit.store.db.LoadPartitions;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.YearMonth;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;

/**
 * The store as it grows ({@code bench/run.sh store --grow 1000000,3000000,10000000}): one schema filled by SQL in the
 * order a fleet loads, release after release, and at each size the questions users ask timed, the database's size,
 * 20,000 more fleet loads ingested by the real store (against a raw COPY of their decisions in the same run), a
 * verify of what is new since the last one, and a prune of the oldest month (then put back, so the next size holds
 * what its name says).
 *
 * <p>The fleet: 1,000 deployments (4 kinds) each loading 4 models 6 times a day, 24,000 loads a day, a release every
 * 10 days (sizes are rounded up to whole releases); every fourth load observed by its device; one incident per model
 * and release whose plan changed (4 of every 5 releases), shown by all 1,000 deployments.
 */
final class GrowthBench {
    /**
     * Ingests the fleet mix's 20,000 loads into the schema (and, asked, into an empty one first): the raw COPY's
     * seconds, the store's, the loads, the store's into the empty schema.
     */
    interface Ingest {
        double[] round(String schema, int round, String chainTopic, Instant from, boolean alsoEmpty) throws Exception;
    }

    static final long DEPLOYMENTS = 1000;
    static final long PER_DAY = 24 * DEPLOYMENTS;
    static final long PER_RELEASE = 10 * PER_DAY;
    static final Instant T0 = Instant.parse("2025-01-01T00:00:00Z");
    static final YearMonth FIRST_MONTH = YearMonth.of(2025, 1);
    /** The prune's cutoff: the end of the first month (31 days of loads). */
    static final Instant FIRST_MONTH_END = Instant.parse("2025-02-01T00:00:00Z");

    private final Postgres pg;
    private final List<Long> sizes;
    private final Ingest ingest;
    private final String schema = "bench_grow_" + Postgres.suffix();
    private final String chainTopic = "bench-grow-" + Postgres.suffix() + ".chain";
    private final Random random = new Random(1);
    /** The store's ingest into an empty schema, as a ratio of the raw COPY, measured in the first round. */
    private double emptyRatio = Double.NaN;

    GrowthBench(Postgres pg, List<Long> sizes, Ingest ingest) {
        this.pg = pg;
        this.sizes = sizes;
        this.ingest = ingest;
    }

    /** One size's figures. */
    record Row(long loads, long storeBytes, Map<String, double[]> latencies, double copySeconds, double ingestSeconds, long ingested,
               double verifySeconds, long verifiedEntries, double pruneSeconds, int prunedLoads, long deadTuples, double fillSeconds) {
    }

    void run() throws Exception {
        List<Row> rows = new ArrayList<>();
        long filled = 0;
        try (AuditDatabase db = pg.open(schema, 4); Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
            FleetFill.plans(s);
            FleetFill.sitesAndBuilds(s, DEPLOYMENTS);
            // The store's months as a store that had run since T0 would have them: made as the fill reaches them (two ahead),
            // not the months of today the migration made.
            for (LoadPartitions.Partition p : LoadPartitions.list(c)) {
                if (!p.isDefault()) {
                    s.execute("DROP TABLE " + p.name());
                }
            }
            for (int round = 0; round < sizes.size(); round++) {
                long target = (sizes.get(round) + PER_RELEASE - 1) / PER_RELEASE * PER_RELEASE;
                long fill = System.nanoTime();
                for (long from = filled; from < target; from += PER_RELEASE) {
                    LoadPartitions.ensureAhead(c, T0.plus(Duration.ofDays(from / PER_DAY + 10)));
                    appendRelease(s, from / PER_RELEASE);
                    System.out.printf(Locale.ROOT, "  filled %,d of %,d loads%n", from + PER_RELEASE, target);
                }
                filled = Math.max(filled, target);
                s.execute("VACUUM ANALYZE");
                s.execute("CHECKPOINT");
                double fillSeconds = (System.nanoTime() - fill) / 1e9;
                Row row = measure(db, c, filled, round, fillSeconds);
                rows.add(row);
                System.out.println(line(row));
            }
            Postgres.drop(c, schema);
        }
        String md = report(rows);
        System.out.println(md);
        Path file = Path.of("bench", "results", "store-growth-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + ".md");
        Files.writeString(file, md);
        System.out.println("written to " + file);
    }

    /** Release {@code rel}'s 10 days of loads, its incidents, and each deployment's chain head after it. */
    private void appendRelease(Statement s, long rel) throws Exception {
        long from = rel * PER_RELEASE;
        insertLoads(s, from, from + PER_RELEASE);
        // Its heads are each deployment's latest of their model now (V29), as the store marks them.
        s.execute("UPDATE load_rows SET is_latest = FALSE WHERE is_latest = TRUE");
        s.execute("UPDATE load_rows SET is_latest = TRUE WHERE is_head = TRUE AND release_name = 'r" + (rel + 1) + "'");
        // Each deployment's chain head after the release, on its lock row, as the store keeps it.
        s.execute("INSERT INTO deployment_locks (deployment_id, chain_seq, chain_hash, chain_load_id) SELECT deployment_id, chain_seq, chain_hash, "
                + "load_id FROM load_rows WHERE summary_offset >= " + (from + PER_RELEASE - DEPLOYMENTS) + " AND summary_offset < " + (from + PER_RELEASE)
                + " ON CONFLICT (deployment_id) DO UPDATE SET chain_seq = EXCLUDED.chain_seq, chain_hash = EXCLUDED.chain_hash, "
                + "chain_load_id = EXCLUDED.chain_load_id");
        if (rel % 5 > 0) {
            // The release's change to each model: one incident, shown by every deployment; only the newest release's stay open.
            s.execute("UPDATE incidents SET state = 'RESOLVED' WHERE state = 'OPEN'");
            s.execute("INSERT INTO incidents (incident_id, model_id, from_release, to_release, primary_kind, kinds, cause, tensor_count, "
                    + "tensors_digest, tensors, state, first_seen, last_seen, version, updated_at) SELECT substr(md5('i' || " + rel + " || m), 1, 40), "
                    + "'model-' || m, 'r" + rel + "', 'r" + (rel + 1) + "', 'LOST_MAPPING', 'LOST_MAPPING', 're-encoded at load: mapped -> off-heap', 21, "
                    + "md5('t' || m), 'blk.0.weight', 'OPEN', now(), now(), 1, now() FROM generate_series(0, 3) m");
            s.execute("INSERT INTO incident_deployments (incident_id, deployment_id, model_id, showing, loads, bytes_moved, offheap_delta, "
                    + "heap_delta, mapped_delta, first_seen, last_seen, last_load_id) SELECT substr(md5('i' || " + rel + " || m), 1, 40), "
                    + "'device-' || d, 'model-' || m, TRUE, 60, 12386304, 88080384, 0, -12386304, now(), now(), md5('G' || d)::uuid::text "
                    + "FROM generate_series(0, 3) m, generate_series(0, " + (DEPLOYMENTS - 1) + ") d");
        }
    }

    /**
     * Loads {@code from} (inclusive) to {@code to} of the fleet, load g being deployment g % 1,000's j-th of day g / 24,000
     * (j = (g % 24,000) / 1,000: model j % 4, its slot of the day j / 4), and every fourth one's observation. A load
     * already there stays (the prune's month is put back so).
     */
    private static void insertLoads(Statement s, long from, long to) throws Exception {
        String day = "(g / " + PER_DAY + ")";
        String j = "((g % " + PER_DAY + ") / " + DEPLOYMENTS + ")";
        String d = "(g % " + DEPLOYMENTS + ")";
        String m = "(" + j + " % 4)";
        String slot = "(" + j + " / 4)";
        String r = "(" + day + " / 10)";
        String time = "TIMESTAMP WITH TIME ZONE '2025-01-01 00:00:00+00' + " + day + " * INTERVAL '1 day' + " + slot + " * INTERVAL '4 hours' + "
                + m + " * INTERVAL '1 minute' + " + d + " * INTERVAL '1 millisecond'";
        String previous = "((" + r + " * 10 - 1) * " + PER_DAY + " + (20 + " + m + ") * " + DEPLOYMENTS + " + " + d + ")";
        String series = " FROM generate_series(" + from + ", " + (to - 1) + ") g";
        s.execute("INSERT INTO load_rows (load_id, deployment_id, release_name, model_id, site_key, build_key, occurred_at, tensor_count, "
                + "stored_bytes, resident_bytes, heap_bytes, offheap_bytes, mapped_bytes, heap_tensors, offheap_tensors, mapped_tensors, "
                + "resolved_at, complete, completed_at, summary_partition, summary_offset, plan_bytes, previous_load_id, previous_release, "
                + "previous_plan_bytes, is_head, chain_seq, chain_hash) SELECT md5('G' || g)::uuid::text, 'device-' || " + d + ", 'r' || (" + r
                + " + 1), 'model-' || " + m + ", " + d + ", " + m + " * 4 + " + d + " % 4, " + time + ", 146, 86114304, 86114304, 0, CASE WHEN "
                + r + " % 5 > 0 THEN 88080384 ELSE 0 END, 86114304, 0, CASE WHEN " + r + " % 5 > 0 THEN 21 ELSE 0 END, 146, " + time + ", TRUE, "
                + time + ", (g % 3)::int, g, decode(" + FleetFill.hex("'p' || " + FleetFill.plan(m, d, r)) + ", 'hex'), CASE WHEN " + r
                + " > 0 THEN md5('G' || " + previous + ")::uuid::text END, CASE WHEN " + r + " > 0 THEN 'r' || " + r + " END, CASE WHEN " + r
                + " > 0 THEN decode(" + FleetFill.hex("'p' || " + FleetFill.plan(m, d, r + " - 1")) + ", 'hex') END, " + day + " % 10 = 9 AND "
                + slot + " = 5, " + day + " * 24 + " + j + " + 1, decode(" + FleetFill.hex("'e' || g") + ", 'hex')" + series
                + " ON CONFLICT DO NOTHING");
        // Each id once, with its time, as the store writes it beside the row (V30).
        s.execute("INSERT INTO load_ids (load_id, occurred_at) SELECT md5('G' || g)::uuid::text, " + time + series + " ON CONFLICT DO NOTHING");
        // Every fourth load observed by its device, as it planned.
        s.execute("INSERT INTO load_observations (load_id, deployment_id, observed_at, method, heap_before, heap_after, direct_before, "
                + "direct_after, mapped_before, mapped_after, tensors_reported, source_partition, source_offset) SELECT md5('G' || g)::uuid::text, "
                + "'device-' || " + d + ", " + time + " + INTERVAL '1 second', 'jvm-counters', 0, 0, 0, CASE WHEN " + r + " % 5 > 0 THEN 88080384 "
                + "ELSE 0 END, 0, 86114304, 146, (g % 3)::int, g" + series + " WHERE g % 4 = 0 ON CONFLICT DO NOTHING");
    }

    private Row measure(AuditDatabase db, Connection c, long loads, int round, double fillSeconds) throws Exception {
        long releases = loads / PER_RELEASE;
        AuditQueries queries = new AuditQueries(db.dataSource(), new GrowthRule("off-heap", 10, 1 << 20), new GrowthRule("heap", 10, 1 << 20));
        Map<String, double[]> latencies = new LinkedHashMap<>();
        timed(latencies, "diff", () -> {
            long rel;
            do {
                rel = 1 + random.nextInt((int) releases - 1);
            } while (rel % 5 == 0);
            if (queries.diff(device(), model(), "r" + rel, "r" + (rel + 1)).isEmpty()) {
                throw new IllegalStateException("no diff");
            }
        });
        timed(latencies, "fleet", () -> {
            if (queries.fleet("r" + (1 + random.nextInt((int) releases))).deployments() == 0) {
                throw new IllegalStateException("no fleet");
            }
        });
        timed(latencies, "where --deployment", () -> require(queries.loads(device(), null, null, 20).size() == 20, "20 loads"));
        timed(latencies, "where --load", () -> require(queries.load(loadId((long) (random.nextDouble() * loads))).orElseThrow().tensors().size()
                == 146, "146 tensors"));
        timed(latencies, "history", () -> require(!queries.tensorHistory(device(), model(), "blk.7.weight", 50).isEmpty(), "history"));
        timed(latencies, "incidents", () -> require(!queries.incidents(false, null, null, 50).isEmpty(), "incidents"));
        timed(latencies, "gate", () -> Incidents.list(c, true, "r" + releases, null));
        long storeBytes = Postgres.sizes(c, schema).values().stream().mapToLong(Long::longValue).sum();

        // Each chain marked where this round's fill left it (its head published), so verify checks what is new since.
        markFilledChains(c);
        Instant newest = T0.plus(Duration.ofDays(loads / PER_DAY));
        double[] ingested = ingest.round(schema, round, chainTopic, newest, round == 0);
        if (round == 0) {
            emptyRatio = ingested[0] / ingested[3];
            System.out.printf(Locale.ROOT, "  ingest into an empty store: %.1f s, %.2f of the raw COPY%n", ingested[3], emptyRatio);
        }
        System.out.printf(Locale.ROOT, "  ingest of %,.0f loads: %.1f s, a raw COPY of their decisions %.1f s%n", ingested[2], ingested[1], ingested[0]);
        long verifying = System.nanoTime();
        ChainLog.Published published = published(c);
        ChainVerifier.Report report = ChainVerifier.verifySinceLastMark(c, Optional.empty(), published);
        VerificationMarks.write(c, db.dialect(), report, Instant.now());
        double verifySeconds = (System.nanoTime() - verifying) / 1e9;
        require(report.intact(), "an intact chain: " + report.breaks().stream().limit(3).toList());
        System.out.printf(Locale.ROOT, "  verify since the last: %.1f s, %,d entries%n", verifySeconds, report.entries());

        // Prune of the oldest month, timed; then the month put back as it was.
        long pruning = System.nanoTime();
        Retention.Result pruned = new Retention(db.dataSource(), db.dialect()).prune(FIRST_MONTH_END, false,
                new PrintWriter(phasesOnly()));
        double pruneSeconds = (System.nanoTime() - pruning) / 1e9;
        System.out.printf(Locale.ROOT, "  prune of the oldest month: %.1f s, %,d loads, partitions dropped whole: %s%n", pruneSeconds, pruned.loads(),
                pruned.partitions());
        Thread.sleep(1000);
        long dead = Sql.number(c, "SELECT COALESCE(SUM(n_dead_tup), 0) FROM pg_stat_user_tables WHERE schemaname = '" + schema + "'");
        try (Statement s = c.createStatement()) {
            // With the plans the prune dropped because no load named them any more.
            FleetFill.plans(s);
            // Its partition again (the loads the prune kept move back in from the default one), then its loads.
            LoadPartitions.create(c, FIRST_MONTH);
            insertLoads(s, 0, 31 * PER_DAY);
            s.execute("DELETE FROM chain_anchors");
            s.execute("VACUUM ANALYZE");
        }
        return new Row(loads, storeBytes, latencies, ingested[0], ingested[1], (long) ingested[2], verifySeconds, report.entries(), pruneSeconds,
                pruned.loads(), dead, fillSeconds);
    }

    /** The prune's progress without its line per deployment: where its time goes, phase by phase. */
    private static Writer phasesOnly() {
        return new Writer() {
            private final StringBuilder line = new StringBuilder();

            @Override
            public void write(char[] chars, int off, int len) {
                for (int i = off; i < off + len; i++) {
                    if (chars[i] == '\n') {
                        if (!line.toString().startsWith("  [")) {
                            System.out.println("  prune:" + line);
                        }
                        line.setLength(0);
                    } else {
                        line.append(chars[i]);
                    }
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
    }

    /** Times one query, printing its figures as it goes. */
    private static void timed(Map<String, double[]> latencies, String what, Latency.Query query) throws Exception {
        long started = System.nanoTime();
        double[] l = Latency.time(query);
        latencies.put(what, l);
        System.out.printf(Locale.ROOT, "  %s: p50 %.1f ms, p99 %.1f ms (%.0f s)%n", what, l[0], l[2], (System.nanoTime() - started) / 1e9);
    }

    /** A mark at each filled deployment's head: the fill's chain hashes are not computed, the store's from here on are. */
    private void markFilledChains(Connection c) throws Exception {
        try (Statement s = c.createStatement()) {
            s.execute("DELETE FROM chain_verifications WHERE deployment_id LIKE 'device-%'");
            s.execute("INSERT INTO chain_verifications SELECT deployment_id, chain_seq, chain_load_id, encode(chain_hash, 'hex'), now() "
                    + "FROM deployment_locks WHERE deployment_id LIKE 'device-%'");
        }
    }

    /** The heads the store published to the chain topic, and the filled deployments' marks as if they had been published too. */
    private ChainLog.Published published(Connection c) throws Exception {
        ChainLog.Published log = ChainLog.read(Map.of("bootstrap.servers", System.getenv("KAFKA_BOOTSTRAP_SERVERS")), chainTopic, schema,
                Duration.ofSeconds(30));
        Map<String, List<ChainHead>> heads = new HashMap<>(log.heads());
        Map<String, ChainHead> anchors = new HashMap<>(log.anchors());
        try (PreparedStatement q = c.prepareStatement("SELECT deployment_id, seq, load_id, entry_hash FROM chain_verifications "
                + "WHERE deployment_id LIKE 'device-%'"); ResultSet rs = q.executeQuery()) {
            while (rs.next()) {
                heads.put(rs.getString(1), List.of(new ChainHead(rs.getString(1), rs.getLong(2), rs.getString(3), rs.getString(4))));
            }
        }
        // Anchors the prune left (not published: Retention is called as a library, not as `store prune`).
        HashChain.anchors(c).forEach(a -> anchors.putIfAbsent(a.deploymentId(), a));
        return new ChainLog.Published(heads, anchors, Set.of());
    }

    /** Load g's id as the fill wrote it: md5('G' || g) as a UUID. */
    static String loadId(long g) throws Exception {
        String hex = HexFormat.of().formatHex(MessageDigest.getInstance("MD5").digest(("G" + g).getBytes(StandardCharsets.UTF_8)));
        return hex.substring(0, 8) + "-" + hex.substring(8, 12) + "-" + hex.substring(12, 16) + "-" + hex.substring(16, 20) + "-" + hex.substring(20);
    }

    private String device() {
        return "device-" + random.nextInt((int) DEPLOYMENTS);
    }

    private String model() {
        return "model-" + random.nextInt(4);
    }

    private static void require(boolean holds, String what) {
        if (!holds) {
            throw new IllegalStateException("expected " + what);
        }
    }

    private static String line(Row r) {
        return String.format(Locale.ROOT, "%,d loads: %s (%.2f GB per million), fill %.0f s; ingest %.2f of a raw COPY; verify %.2f s (%,d entries); "
                        + "prune %.1f s (%,d loads, %,d dead tuples after)", r.loads(), ByteSizes.format(r.storeBytes()), gbPerMillion(r),
                r.fillSeconds(), r.copySeconds() / r.ingestSeconds(), r.verifySeconds(), r.verifiedEntries(), r.pruneSeconds(), r.prunedLoads(),
                r.deadTuples());
    }

    private static double gbPerMillion(Row r) {
        return r.storeBytes() * 1e6 / r.loads() / 1e9;
    }

    private String report(List<Row> rows) {
        StringBuilder md = new StringBuilder("# audit-store as it grows, " + LocalDateTime.now().format(DateTimeFormatter.ISO_LOCAL_DATE_TIME) + "\n\n");
        md.append("`bench/run.sh store --grow ").append(String.join(",", sizes.stream().map(String::valueOf).toList())).append("`; PostgreSQL at ")
                .append(pg.url()).append(", ").append(Runtime.getRuntime().availableProcessors()).append(" cores. The fleet: ").append(DEPLOYMENTS)
                .append(" deployments loading 4 models 6 times a day (24,000 loads a day), a release every 10 days, every fourth load observed, "
                        + "an incident per model and changed release; rows filled by SQL in the order the loads happened, vacuumed. Query latency: "
                        + Latency.MEASURED + " calls after " + Latency.WARM_UP + " of warm-up, in one JVM over JDBC.\n\n");
        md.append(String.format(Locale.ROOT, "Ingest into an empty store, the same 20,000 loads as the first round's: **%.2f** of the raw COPY; "
                + "each size's ratio below is also given as a share of it.%n%n", emptyRatio));
        md.append("| loads | GB per million | ");
        rows.get(0).latencies().keySet().forEach(q -> md.append(q).append(" p50/p99 ms | "));
        md.append("ingest of 20,000 loads, ratio to raw COPY | verify since the last (s, entries) | prune of the oldest month (s, loads) | dead tuples after |\n|");
        md.append("---|".repeat(6 + rows.get(0).latencies().size())).append("\n");
        for (Row r : rows) {
            md.append(String.format(Locale.ROOT, "| %,d | %.2f | ", r.loads(), gbPerMillion(r)));
            r.latencies().values().forEach(l -> md.append(String.format(Locale.ROOT, "%.1f / %.1f | ", l[0], l[2])));
            md.append(String.format(Locale.ROOT, "%.2f, %.2f of empty (%.1f s) | %.2f (%,d) | %.1f (%,d) | %,d |%n", r.copySeconds() / r.ingestSeconds(),
                    r.copySeconds() / r.ingestSeconds() / emptyRatio, r.ingestSeconds(), r.verifySeconds(), r.verifiedEntries(), r.pruneSeconds(), r.prunedLoads(), r.deadTuples()));
        }
        return md.toString();
    }
}
