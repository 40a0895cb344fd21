package dev.placementaudit.bench;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.producer.simulate.FleetSimulator;
import dev.placementaudit.producer.simulate.ModelCatalog;
import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.service.Settings;
import dev.placementaudit.store.AuditStore;
import dev.placementaudit.store.StoreConfig;
import dev.placementaudit.store.db.AuditDatabase;
import dev.placementaudit.store.query.AuditQueries;
import dev.placementaudit.store.regression.GrowthRule;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.worker.resolve.LoadResolution;
import dev.placementaudit.worker.resolve.LoadValidator;
import dev.placementaudit.worker.resolve.Provenance;
import dev.placementaudit.worker.resolve.ResolvedLoad;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyManager;

import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;

/**
 * Audit-store ingest against raw PostgreSQL, in one run on one database server:
 * <ul>
 *   <li><b>raw COPY</b>: the same decision rows, already rendered as text, streamed with {@code COPY} into an empty
 *       {@code decisions} table with the same indexes - the fastest way PostgreSQL takes rows;</li>
 *   <li><b>audit-store</b>: the real store consuming the decisions and summaries from Kafka, exactly once, with
 *       completeness, signatures and regression detection;</li>
 * </ul>
 * and the latency of a release diff (two loads of 146 tensors) against a {@code decisions} table of N rows.
 */
public final class StoreBench {
    public static void main(String[] args) throws Exception {
        AvroTrust.install();
        Map<String, String> options = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            options.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        int loads = Integer.parseInt(options.getOrDefault("loads", "1000"));
        int runs = Integer.parseInt(options.getOrDefault("runs", "3"));
        long diffRows = Long.parseLong(options.getOrDefault("diff-rows", "10000000"));
        String storeHeap = options.get("store-heap");
        String bootstrap = System.getenv("KAFKA_BOOTSTRAP_SERVERS");
        if (bootstrap == null) {
            throw new IllegalStateException("run through bench/run.sh store, which starts a broker");
        }
        StoreBench bench = new StoreBench(bootstrap, loads, runs, diffRows);
        if (storeHeap != null) {
            bench.heapRun(storeHeap);
        } else {
            bench.run();
        }
    }

    private final String bootstrap;
    private final int loads;
    private final int runs;
    private final long diffRows;
    private final String pgUrl;
    private final String pgUser;
    private final String pgPassword;
    /** Milliseconds the last ingest run's batches spent per phase. */
    private final Map<String, Double> lastPhases = new java.util.LinkedHashMap<>();

    private StoreBench(String bootstrap, int loads, int runs, long diffRows) {
        this.bootstrap = bootstrap;
        this.loads = loads;
        this.runs = runs;
        this.diffRows = diffRows;
        this.pgUrl = "jdbc:postgresql://" + env("PGHOST", "127.0.0.1") + ":" + env("PGPORT", "5432") + "/" + env("PGDATABASE", "test");
        this.pgUser = env("PGUSER", "postgres");
        this.pgPassword = env("PGPASSWORD", "");
    }

    private void run() throws Exception {
        List<ResolvedLoad> resolved = resolve();
        long decisions = resolved.stream().mapToLong(r -> r.decisions().size()).sum();
        String base = KafkaBroker.uniqueTopic("bench-store");
        publish(resolved, base);
        List<Double> copy = new ArrayList<>();
        List<Double> store = new ArrayList<>();
        for (int run = 1; run <= runs; run++) {
            copy.add(rawCopy(resolved, "bench_copy_" + run + "_" + suffix()));
            store.add(ingest(base, "bench_store_" + run + "_" + suffix()));
            System.out.printf(Locale.ROOT, "run %d  raw COPY %.2f s (%.0f rows/s)   audit-store %.2f s (%.0f decisions/s)%n", run,
                    copy.get(run - 1), decisions / copy.get(run - 1), store.get(run - 1), decisions / store.get(run - 1));
        }
        double[] diff = diffRows > 0 ? diffLatency() : new double[]{Double.NaN, Double.NaN, Double.NaN, 0};
        double copyMedian = median(copy);
        double storeMedian = median(store);
        StringBuilder md = new StringBuilder();
        md.append("# audit-store benchmark, ").append(LocalDateTime.now().format(DateTimeFormatter.ISO_LOCAL_DATE_TIME)).append("\n\n");
        md.append(String.format(Locale.ROOT, "%d loads of %s: %d decisions; median of %d runs; PostgreSQL at %s; %d cores.%n%n", loads,
                ModelCatalog.LLAMA_3_2_1B_Q4_K_M.id(), decisions, runs, pgUrl, Runtime.getRuntime().availableProcessors()));
        md.append("| mode | seconds | rows/s | ratio to raw COPY |\n|---|---|---|---|\n");
        md.append(String.format(Locale.ROOT, "| raw COPY of the same rows (pre-rendered, same table and indexes) | %.2f | %.0f | 1.00 |%n",
                copyMedian, decisions / copyMedian));
        md.append(String.format(Locale.ROOT, "| audit-store ingest from Kafka (exactly once, completeness, diffs) | %.2f | %.0f | %.2f |%n",
                storeMedian, decisions / storeMedian, copyMedian / storeMedian));
        double phaseTotal = lastPhases.values().stream().mapToDouble(Double::doubleValue).sum();
        md.append("\nWhere the last run's batches spent their time (pa_store_batch_phase_seconds, ms): ");
        List.of("rows", "lock", "complete", "chain", "detect", "commit").forEach(phase -> md.append(String.format(Locale.ROOT, "%s %.0f (%.0f%%) ",
                phase, lastPhases.getOrDefault(phase, 0.0), 100 * lastPhases.getOrDefault(phase, 0.0) / Math.max(1, phaseTotal))));
        md.append(String.format(Locale.ROOT, "; in batches %.0f ms of the run's %.0f ms.%n", phaseTotal, storeMedian * 1000));
        md.append(String.format(Locale.ROOT, "%nrelease diff (146 vs 146 tensors) with %,d decision rows in the table: p50 %.1f ms, p95 %.1f ms, max %.1f ms over %d diffs%n",
                diffRows, diff[0], diff[1], diff[2], (int) diff[3]));
        System.out.println();
        System.out.println(md);
        Path file = Path.of("bench", "results", "store-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + ".md");
        Files.createDirectories(file.getParent());
        Files.writeString(file, md.toString());
        System.out.println("written to " + file);
    }

    /**
     * The store as its own process with a bounded heap ({@code --store-heap 256m}), ingesting the same records at full
     * rate; its GC log gives the heap it used: the peak before a collection and the most that stayed live after one.
     */
    private void heapRun(String heap) throws Exception {
        List<ResolvedLoad> resolved = resolve();
        long decisions = resolved.stream().mapToLong(r -> r.decisions().size()).sum();
        String base = KafkaBroker.uniqueTopic("bench-heap");
        publish(resolved, base);
        String schema = "bench_heap_" + suffix();
        try (AuditDatabase db = AuditDatabase.open(pgUrl, pgUser, pgPassword, schema, 2)) {
            Path gcLog = Files.createTempFile("pa-store-gc", ".log");
            Path out = Files.createTempFile("pa-store-out", ".log");
            List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx" + heap,
                    "-Xlog:gc:file=" + gcLog, "-cp", System.getProperty("java.class.path"), "dev.placementaudit.store.cli.AuditStoreCli", "run"));
            Map<String, String> settings = new java.util.LinkedHashMap<>(Map.of("kafka.bootstrap.servers", bootstrap,
                    "store.decisions.topic", base + ".decided", "store.resolved.topic", base + ".resolved", "store.alerts.topic", base + ".alerts",
                    "store.chain.topic", base + ".chain", "store.group.id", schema, "store.jdbc.url", pgUrl, "store.jdbc.user", pgUser,
                    "store.jdbc.schema", schema, "store.http.port", "-1"));
            settings.put("store.jdbc.password", pgPassword);
            settings.forEach((k, v) -> {
                command.add("--set");
                command.add(k + "=" + v);
            });
            long started = System.nanoTime();
            Process store = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile()).start();
            double seconds;
            try (Connection c = db.dataSource().getConnection(); PreparedStatement s = c.prepareStatement("SELECT COUNT(*) FROM loads WHERE complete = TRUE")) {
                while (true) {
                    try (ResultSet rs = s.executeQuery()) {
                        rs.next();
                        if (rs.getLong(1) >= loads) {
                            break;
                        }
                    }
                    if (!store.isAlive()) {
                        throw new IllegalStateException("the store exited: " + Files.readString(out));
                    }
                    Thread.sleep(20);
                }
                seconds = (System.nanoTime() - started) / 1e9;
            } finally {
                store.destroy();
                store.waitFor(30, java.util.concurrent.TimeUnit.SECONDS);
            }
            long peakBefore = 0;
            long maxAfter = 0;
            int collections = 0;
            java.util.regex.Pattern pause = java.util.regex.Pattern.compile("(\\d+)M->(\\d+)M\\((\\d+)M\\)");
            for (String line : Files.readAllLines(gcLog)) {
                java.util.regex.Matcher m = pause.matcher(line);
                if (line.contains("Pause") && m.find()) {
                    collections++;
                    peakBefore = Math.max(peakBefore, Long.parseLong(m.group(1)));
                    maxAfter = Math.max(maxAfter, Long.parseLong(m.group(2)));
                }
            }
            String md = String.format(Locale.ROOT, "# audit-store heap, %s%n%n`bench/run.sh store --store-heap %s --loads %d`: the store as its own "
                            + "process with -Xmx%s (JVM start included in the time), ingesting %d decisions of %d loads from Kafka into PostgreSQL.%n%n"
                            + "| -Xmx | seconds | decisions/s | GC pauses | heap peak before a GC | most live after a GC |%n|---|---|---|---|---|---|%n"
                            + "| %s | %.2f | %.0f | %d | %d MiB | %d MiB |%n", LocalDateTime.now().format(DateTimeFormatter.ISO_LOCAL_DATE_TIME), heap,
                    loads, heap, decisions, loads, heap, seconds, decisions / seconds, collections, peakBefore, maxAfter);
            System.out.println(md);
            Path file = Path.of("bench", "results", "store-heap-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + ".md");
            Files.writeString(file, md);
            System.out.println("written to " + file);
            try (Connection c = db.dataSource().getConnection()) {
                drop(c, schema);
            }
        }
    }

    private List<ResolvedLoad> resolve() {
        FleetSimulator fleet = new FleetSimulator(3, loads / 2, List.of("r1", "r2"), List.of(ModelCatalog.LLAMA_3_2_1B_Q4_K_M), List.of(),
                Instant.parse("2026-11-01T00:00:00Z"));
        LoadResolution resolution = new LoadResolution("bench/skainet-1192");
        LoadValidator validator = new LoadValidator(1_000_000);
        List<ResolvedLoad> resolved = new ArrayList<>();
        for (ModelLoaded load : fleet) {
            resolved.add(resolution.resolve(validator.validate(load), new Provenance("model-loads", 0, resolved.size()), Instant.now()));
        }
        return resolved;
    }

    private void publish(List<ResolvedLoad> resolved, String base) throws Exception {
        Map<String, Object> config = new HashMap<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ProducerConfig.LINGER_MS_CONFIG, "10", ProducerConfig.BATCH_SIZE_CONFIG, "131072", ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4"));
        EventSerde<LoadResolved> summaries = EventSerde.of(LoadResolved.class);
        try (org.apache.kafka.clients.admin.Admin admin = org.apache.kafka.clients.admin.Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            admin.createTopics(List.of(new org.apache.kafka.clients.admin.NewTopic(base + ".decided", 3, (short) 1),
                    new org.apache.kafka.clients.admin.NewTopic(base + ".resolved", 3, (short) 1),
                    new org.apache.kafka.clients.admin.NewTopic(base + ".alerts", 1, (short) 1),
                    new org.apache.kafka.clients.admin.NewTopic(base + ".decided.dlq", 1, (short) 1))).all().get();
        }
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer())) {
            for (ResolvedLoad r : resolved) {
                byte[] key = r.summary().getDeploymentId().getBytes(StandardCharsets.UTF_8);
                for (byte[] decision : r.encodedDecisions()) {
                    producer.send(new ProducerRecord<>(base + ".decided", key, decision));
                }
                producer.send(new ProducerRecord<>(base + ".resolved", key, summaries.encode(r.summary())));
            }
            producer.flush();
        }
    }

    /** COPY of the decision rows into a migrated, empty schema: the raw PostgreSQL baseline. */
    private double rawCopy(List<ResolvedLoad> resolved, String schema) throws Exception {
        try (AuditDatabase db = AuditDatabase.open(pgUrl, pgUser, pgPassword, schema, 2)) {
            StringBuilder text = new StringBuilder();
            for (ResolvedLoad r : resolved) {
                for (AllocationDecided d : r.decisions()) {
                    text.append(String.join("\t", d.getDecisionId(), d.getLoadId(), d.getTensorName(), Integer.toString(d.getTensorIndex()),
                            d.getDtype(), d.getStoredEncoding(), d.getStoredFormat(), Long.toString(d.getElementCount()),
                            Long.toString(d.getStoredBytes()), d.getResidentFormat(), Long.toString(d.getResidentBytes()), d.getDomain().name(),
                            d.getScope().name(), Boolean.toString(d.getMappingRequested()), d.getReasonCode().name(), d.getPlacementReason().name(),
                            d.getMappingBlockers().stream().map(Enum::name).collect(Collectors.joining(",")), d.getReason(),
                            d.getResolverVersion(), d.getPolicyDigest(), Integer.toString(d.getSourcePartition()),
                            Long.toString(d.getSourceOffset()), Boolean.toString(d.getSizeEstimated()))).append('\n');
                }
            }
            String rows = text.toString();
            try (Connection c = db.dataSource().getConnection()) {
                CopyManager copy = c.unwrap(PGConnection.class).getCopyAPI();
                long started = System.nanoTime();
                copy.copyIn("COPY " + schema + ".decisions FROM STDIN", new StringReader(rows));
                double seconds = (System.nanoTime() - started) / 1e9;
                drop(c, schema);
                return seconds;
            }
        }
    }

    private double ingest(String base, String schema) throws Exception {
        Map<String, String> settings = new HashMap<>();
        settings.put("kafka.bootstrap.servers", bootstrap);
        settings.put("store.decisions.topic", base + ".decided");
        settings.put("store.resolved.topic", base + ".resolved");
        settings.put("store.alerts.topic", base + ".alerts");
        settings.put("store.chain.topic", base + ".chain");
        settings.put("store.group.id", schema);
        settings.put("store.jdbc.url", pgUrl);
        settings.put("store.jdbc.user", pgUser);
        settings.put("store.jdbc.password", pgPassword);
        settings.put("store.jdbc.schema", schema);
        settings.put("store.http.port", "-1");
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        double seconds;
        long started = System.nanoTime();
        try (AuditStore store = AuditStore.start(StoreConfig.from(Settings.of(settings)), registry)) {
            while (registry.counter("pa.store.loads.completed").count() < loads) {
                Thread.sleep(5);
            }
            seconds = (System.nanoTime() - started) / 1e9;
            lastPhases.clear();
            registry.find("pa.store.batch.phase").timers().forEach(t -> lastPhases.put(t.getId().getTag("phase"),
                    t.totalTime(java.util.concurrent.TimeUnit.MILLISECONDS)));
            try (Connection c = store.database().dataSource().getConnection()) {
                drop(c, schema);
            }
        }
        return seconds;
    }

    /** Fills a schema with {@code diffRows} decisions in loads of 146, then times release diffs against it. */
    private double[] diffLatency() throws Exception {
        String schema = "bench_diff_" + suffix();
        int perLoad = 146;
        long loadCount = diffRows / perLoad;
        try (AuditDatabase db = AuditDatabase.open(pgUrl, pgUser, pgPassword, schema, 2); Connection c = db.dataSource().getConnection();
             Statement s = c.createStatement()) {
            System.out.printf(Locale.ROOT, "filling %s with %,d decisions in %,d loads...%n", schema, loadCount * perLoad, loadCount);
            long fill = System.nanoTime();
            s.execute("INSERT INTO loads SELECT 'L' || g, 'dep-' || (g / 2), 'c', 'h', 'r' || (g % 2), 'm', 'M', NULL, 'android', 'edge', "
                    + "TIMESTAMP WITH TIME ZONE '2026-11-01 00:00:00+00' + (g * INTERVAL '1 second'), " + perLoad + ", 0, 0, 0, 0, 0, 0, 0, 0, "
                    + "'v', 'p', now(), TRUE, now(), NULL, 0, g FROM generate_series(0, " + (loadCount - 1) + ") AS g");
            s.execute("INSERT INTO decisions SELECT 'D' || g, 'L' || (g / " + perLoad + "), 't' || (g % " + perLoad + "), (g % " + perLoad + ")::int, "
                    + "'FP32', 'Q4_K', 'Float32/Q4_K', 1048576, 589824, 'Float32/Q4_K', 589824, CASE WHEN g % 7 = 0 THEN 'HOST_OFFHEAP' ELSE 'MMAP_FILE' END, "
                    + "'MODEL', TRUE, 'MAPPED_OK', 'MAPPED_OK', '', 'mapped', 'v', 'p', 0, g, FALSE FROM generate_series(0, " + (loadCount * perLoad - 1) + ") AS g");
            s.execute("ANALYZE");
            System.out.printf(Locale.ROOT, "filled in %.0f s%n", (System.nanoTime() - fill) / 1e9);
            try (ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM decisions")) {
                rs.next();
                System.out.printf(Locale.ROOT, "decisions: %,d%n", rs.getLong(1));
            }
            AuditQueries queries = new AuditQueries(db.dataSource(), new GrowthRule("off-heap", 10, 1 << 20), new GrowthRule("heap", 10, 1 << 20));
            List<Double> millis = new ArrayList<>();
            for (int i = 0; i < 220; i++) {
                long deployment = (long) (Math.random() * (loadCount / 2 - 1));
                long t = System.nanoTime();
                if (queries.diff("dep-" + deployment, "m", "r0", "r1").isEmpty()) {
                    throw new IllegalStateException("no diff for dep-" + deployment);
                }
                if (i >= 20) {
                    millis.add((System.nanoTime() - t) / 1e6);
                }
            }
            drop(c, schema);
            double[] sorted = millis.stream().mapToDouble(Double::doubleValue).sorted().toArray();
            return new double[]{sorted[sorted.length / 2], sorted[(int) (sorted.length * 0.95)], sorted[sorted.length - 1], sorted.length};
        }
    }

    private static void drop(Connection c, String schema) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute("DROP SCHEMA " + schema + " CASCADE");
        }
    }

    private static double median(List<Double> values) {
        double[] sorted = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return sorted[sorted.length / 2];
    }

    private static String suffix() {
        return UUID.randomUUID().toString().replace("-", "").substring(0, 8);
    }

    private static String env(String name, String fallback) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? fallback : v;
    }
}
