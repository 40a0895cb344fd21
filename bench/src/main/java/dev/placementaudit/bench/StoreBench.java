package dev.placementaudit.bench;

import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.producer.simulate.Drift;
import dev.placementaudit.producer.simulate.FleetSimulator;
import dev.placementaudit.producer.simulate.ModelCatalog;
import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.resolution.LoadValidator;
import dev.placementaudit.resolution.Provenance;
import dev.placementaudit.resolution.ResolvedLoad;
import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.service.Settings;
import dev.placementaudit.store.AuditStore;
import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.store.db.AuditDatabase;
import dev.placementaudit.store.ingest.ReleaseHeads;
import dev.placementaudit.store.query.AuditQueries;
import dev.placementaudit.store.regression.GrowthRule;
import dev.placementaudit.testkit.KafkaBroker;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyManager;

import java.io.BufferedInputStream;
import java.io.InputStream;
import java.io.Writer;
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
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Audit-store ingest against raw PostgreSQL, in one run on one database server:
 * <ul>
 *   <li><b>raw COPY</b>: the same decision rows, already rendered as text, streamed with {@code COPY} into an empty
 *       {@code decisions} table with the same indexes - the fastest way PostgreSQL takes rows;</li>
 *   <li><b>audit-store</b>: the real store consuming the decisions and summaries from Kafka, exactly once, with
 *       completeness, signatures and regression detection;</li>
 * </ul>
 * for a fleet mix (plans repeat) or distinct plans; the database's size per load; and the latency of diff, fleet and
 * where against a million loads filled by SQL as the store leaves them.
 */
public final class StoreBench {
    public static void main(String[] args) throws Exception {
        AvroTrust.install();
        Map<String, String> options = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            options.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        String mix = options.getOrDefault("mix", "fleet");
        if (!List.of("fleet", "distinct").contains(mix)) {
            throw new IllegalArgumentException("--mix is fleet (4 models x 3 releases x 4 deployment kinds: plans repeat) or distinct "
                    + "(every load its own plan), not " + mix);
        }
        int loads = Integer.parseInt(options.getOrDefault("loads", mix.equals("fleet") ? "20000" : "2000"));
        int runs = Integer.parseInt(options.getOrDefault("runs", "3"));
        long queryLoads = Long.parseLong(options.getOrDefault("query-loads", "1000000"));
        String storeHeap = options.get("store-heap");
        String bootstrap = System.getenv("KAFKA_BOOTSTRAP_SERVERS");
        if (bootstrap == null) {
            throw new IllegalStateException("run through bench/run.sh store, which starts a broker");
        }
        StoreBench bench = new StoreBench(bootstrap, mix, loads, runs, queryLoads);
        bench.keepQuerySchema = Boolean.parseBoolean(options.getOrDefault("keep-schema", "false"));
        if (storeHeap != null) {
            bench.heapRun(storeHeap);
        } else {
            bench.run();
        }
    }

    private final String bootstrap;
    private final String mix;
    private final int loads;
    private final int runs;
    private final long queryLoads;
    /** Leaves the million-load schema of the query run in place, for EXPLAIN and the like. */
    private boolean keepQuerySchema;
    private final String pgUrl;
    private final String pgUser;
    private final String pgPassword;
    /** Milliseconds the last ingest run's batches spent per phase. */
    private final Map<String, Double> lastPhases = new LinkedHashMap<>();

    /** Database size after the last ingest run: bytes per table (pg_total_relation_size, indexes and TOAST included). */
    private final Map<String, Long> lastSizes = new LinkedHashMap<>();
    /** Rows the last ingest run staged and plan tensor rows it wrote (pa_store_decisions_staged, pa_store_plan_tensor_rows). */
    private double lastStaged;
    private double lastPlanRows;

    private StoreBench(String bootstrap, String mix, int loads, int runs, long queryLoads) {
        this.bootstrap = bootstrap;
        this.mix = mix;
        this.loads = loads;
        this.runs = runs;
        this.queryLoads = queryLoads;
        this.pgUrl = "jdbc:postgresql://" + env("PGHOST", "127.0.0.1") + ":" + env("PGPORT", "5432") + "/" + env("PGDATABASE", "test");
        this.pgUser = env("PGUSER", "postgres");
        this.pgPassword = env("PGPASSWORD", "");
    }

    private void run() throws Exception {
        if (runs == 0) {
            // --runs 0: the query latencies alone.
            String md = queryLatency();
            System.out.println(md);
            Path file = Path.of("bench", "results", "store-queries-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + ".md");
            Files.writeString(file, "# audit-store queries, " + LocalDateTime.now().format(DateTimeFormatter.ISO_LOCAL_DATE_TIME) + "\n\n`bench/run.sh store "
                    + "--runs 0 --query-loads " + queryLoads + "`\n\n" + md);
            System.out.println("written to " + file);
            return;
        }
        String base = KafkaBroker.uniqueTopic("bench-store");
        Path copyRows = Files.createTempFile("pa-bench-copy", ".tsv");
        Stream stream = publish(base, copyRows);
        System.out.printf(Locale.ROOT, "%s mix: %,d loads, %,d decisions, %d distinct plans published%n", mix, stream.loads(), stream.decisions(),
                stream.plans());
        List<Double> copy = new ArrayList<>();
        List<Double> store = new ArrayList<>();
        for (int run = 1; run <= runs; run++) {
            copy.add(rawCopy(copyRows, "bench_copy_" + run + "_" + suffix()));
            store.add(ingest(base, "bench_store_" + run + "_" + suffix()));
            System.out.printf(Locale.ROOT, "run %d  raw COPY %.2f s (%.0f rows/s)   audit-store %.2f s (%.0f decisions/s); database %s%n", run,
                    copy.get(run - 1), stream.decisions() / copy.get(run - 1), store.get(run - 1), stream.decisions() / store.get(run - 1),
                    lastSizes);
        }
        Files.deleteIfExists(copyRows);
        double copyMedian = median(copy);
        double storeMedian = median(store);
        StringBuilder md = new StringBuilder();
        md.append("# audit-store benchmark, ").append(LocalDateTime.now().format(DateTimeFormatter.ISO_LOCAL_DATE_TIME)).append("\n\n");
        md.append(String.format(Locale.ROOT, "`bench/run.sh store --mix %s --loads %d --runs %d --query-loads %d`: %s. %,d loads, %,d decisions, "
                        + "%d distinct placement plans; median of %d runs; PostgreSQL at %s; %d cores.%n%n", mix, loads, runs, queryLoads,
                mix.equals("fleet") ? "a fleet of 4 catalog models x 3 releases (r2 dequantizes ffn_down) x 4 deployment kinds (profiles, platforms)"
                        : "every load its own plan (one tensor renamed per load): the first-seen path alone", stream.loads(), stream.decisions(),
                stream.plans(), runs, pgUrl, Runtime.getRuntime().availableProcessors()));
        md.append("| mode | seconds | decisions/s | ratio to raw COPY |\n|---|---|---|---|\n");
        md.append(String.format(Locale.ROOT, "| raw COPY of the same per-decision rows (pre-rendered, into the decisions table and its indexes) | %.2f | %.0f | 1.00 |%n",
                copyMedian, stream.decisions() / copyMedian));
        md.append(String.format(Locale.ROOT, "| audit-store ingest from Kafka (exactly once, plans, completeness, diffs, chain) | %.2f | %.0f | **%.2f** |%n",
                storeMedian, stream.decisions() / storeMedian, copyMedian / storeMedian));
        md.append(String.format(Locale.ROOT, "%nThe last run staged %,.0f decision rows and wrote %,.0f plan tensor rows (pa_store_decisions_staged, "
                + "pa_store_plan_tensor_rows).%n", lastStaged, lastPlanRows));
        double phaseTotal = lastPhases.values().stream().mapToDouble(Double::doubleValue).sum();
        md.append("\nWhere the last run's batches spent their time (pa_store_batch_phase_seconds, ms): ");
        List<String> order = new ArrayList<>(List.of("rows", "lock", "complete", "chain", "detect", "commit"));
        lastPhases.keySet().stream().filter(phase -> !order.contains(phase)).sorted().forEach(order::add);
        order.forEach(phase -> md.append(String.format(Locale.ROOT, "%s %.0f (%.0f%%) ",
                phase, lastPhases.getOrDefault(phase, 0.0), 100 * lastPhases.getOrDefault(phase, 0.0) / Math.max(1, phaseTotal))));
        md.append(String.format(Locale.ROOT, "; in batches %.0f ms of the run's %.0f ms.%n", phaseTotal, storeMedian * 1000));
        long total = lastSizes.values().stream().mapToLong(Long::longValue).sum();
        md.append(String.format(Locale.ROOT, "%nDatabase after the last run (pg_total_relation_size, indexes included): %,d bytes for %,d loads, "
                + "%,.0f bytes per load: **%.2f GB per million loads** at this mix. By table: %s.%n", total, stream.loads(),
                (double) total / stream.loads(), total * 1e6 / stream.loads() / 1e9, lastSizes.entrySet().stream()
                        .filter(e -> e.getValue() > 0).map(e -> e.getKey() + " " + ByteSizes.format(e.getValue())).collect(Collectors.joining(", "))));
        if (queryLoads > 0) {
            md.append("\n").append(queryLatency());
        }
        System.out.println();
        System.out.println(md);
        Path file = Path.of("bench", "results", "store-" + mix + "-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + ".md");
        Files.createDirectories(file.getParent());
        Files.writeString(file, md.toString());
        System.out.println("written to " + file);
    }

    /** What was published. */
    private record Stream(int loads, long decisions, int plans) {
    }

    /**
     * The store as its own process with a bounded heap ({@code --store-heap 256m}), ingesting the same records at full
     * rate; its GC log gives the heap it used: the peak before a collection and the most that stayed live after one.
     */
    private void heapRun(String heap) throws Exception {
        String base = KafkaBroker.uniqueTopic("bench-heap");
        Path unused = Files.createTempFile("pa-bench-copy", ".tsv");
        long decisions = publish(base, unused).decisions();
        Files.delete(unused);
        String schema = "bench_heap_" + suffix();
        try (AuditDatabase db = AuditDatabase.open(pgUrl, pgUser, pgPassword, schema, 2)) {
            Path gcLog = Files.createTempFile("pa-store-gc", ".log");
            Path out = Files.createTempFile("pa-store-out", ".log");
            List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx" + heap,
                    "-Xlog:gc:file=" + gcLog, "-cp", System.getProperty("java.class.path"), "dev.placementaudit.store.cli.AuditStoreCli", "run"));
            Map<String, String> settings = new LinkedHashMap<>(Map.of("kafka.bootstrap.servers", bootstrap,
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
                store.waitFor(30, TimeUnit.SECONDS);
            }
            long peakBefore = 0;
            long maxAfter = 0;
            int collections = 0;
            Pattern pause = Pattern.compile("(\\d+)M->(\\d+)M\\((\\d+)M\\)");
            for (String line : Files.readAllLines(gcLog)) {
                Matcher m = pause.matcher(line);
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

    /** The loads of the mix, in the order a fleet would load them. */
    private Iterable<ModelLoaded> fleet() {
        Instant t0 = Instant.parse("2026-11-01T00:00:00Z");
        if (mix.equals("fleet")) {
            List<String> releases = List.of("r1", "r2", "r3");
            int deployments = (loads + 11) / 12;
            FleetSimulator fleet = new FleetSimulator(7, deployments, releases, ModelCatalog.ALL,
                    List.of(Drift.parse("r2:dequantize=*ffn_down*", releases)), t0);
            List<ModelLoaded> first = new ArrayList<>();
            for (ModelLoaded load : fleet) {
                if (first.size() == loads) {
                    break;
                }
                first.add(load);
            }
            return first;
        }
        FleetSimulator fleet = new FleetSimulator(3, loads, List.of("r1"), List.of(ModelCatalog.LLAMA_3_2_1B_Q4_K_M), List.of(), t0);
        List<ModelLoaded> distinct = new ArrayList<>();
        for (ModelLoaded load : fleet) {
            // One tensor renamed per load: its decision, and so the load's plan, is like no other's.
            List<TensorInfo> tensors = new ArrayList<>(load.getTensors());
            tensors.set(0, TensorInfo.newBuilder(tensors.get(0)).setName(tensors.get(0).getName() + ".v" + distinct.size()).build());
            distinct.add(ModelLoaded.newBuilder(load).setTensors(tensors).build());
        }
        return distinct;
    }

    /**
     * Resolves each load as the worker does and publishes its decisions and summary, one load at a time (a fleet's
     * millions of decisions are never all in memory), writing the same decisions as COPY text rows to a file.
     */
    private Stream publish(String base, Path copyRows) throws Exception {
        Map<String, Object> config = new HashMap<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ProducerConfig.LINGER_MS_CONFIG, "10", ProducerConfig.BATCH_SIZE_CONFIG, "131072", ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4"));
        EventSerde<LoadResolved> summaries = EventSerde.of(LoadResolved.class);
        createTopics(base);
        LoadResolution resolution = new LoadResolution("bench/skainet-1192");
        LoadValidator validator = new LoadValidator(1_000_000);
        int count = 0;
        long decisions = 0;
        Set<String> plans = new HashSet<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer());
             Writer rows = Files.newBufferedWriter(copyRows, StandardCharsets.UTF_8)) {
            for (ModelLoaded load : fleet()) {
                ResolvedLoad r = resolution.resolve(validator.validate(load), new Provenance("model-loads", 0, count), Instant.now());
                byte[] key = r.summary().getDeploymentId().getBytes(StandardCharsets.UTF_8);
                for (byte[] decision : r.encodedDecisions()) {
                    producer.send(new ProducerRecord<>(base + ".decided", key, decision));
                }
                producer.send(new ProducerRecord<>(base + ".resolved", key, summaries.encode(r.summary())));
                for (AllocationDecided d : r.decisions()) {
                    rows.write(copyRow(d));
                }
                decisions += r.decisions().size();
                plans.add(r.summary().getPlanDigest());
                if (++count % 2_000 == 0) {
                    System.out.printf(Locale.ROOT, "  published %,d loads (%,d decisions)%n", count, decisions);
                }
            }
            producer.flush();
        }
        return new Stream(count, decisions, plans.size());
    }

    private void createTopics(String base) throws Exception {
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            admin.createTopics(List.of(new NewTopic(base + ".decided", 3, (short) 1),
                    new NewTopic(base + ".resolved", 3, (short) 1),
                    new NewTopic(base + ".alerts", 1, (short) 1),
                    new NewTopic(base + ".decided.dlq", 1, (short) 1))).all().get();
        }
    }

    /** One decision as a COPY text row of the decisions table, as a store that kept a row per decision would write it. */
    private static String copyRow(AllocationDecided d) {
        return String.join("\t", d.getDecisionId(), d.getLoadId(), d.getTensorName(), Integer.toString(d.getTensorIndex()),
                d.getDtype(), d.getStoredEncoding(), d.getStoredFormat(), Long.toString(d.getElementCount()),
                Long.toString(d.getStoredBytes()), d.getResidentFormat(), Long.toString(d.getResidentBytes()), d.getDomain().name(),
                d.getScope().name(), Boolean.toString(d.getMappingRequested()), d.getReasonCode().name(), d.getPlacementReason().name(),
                d.getMappingBlockers().stream().map(Enum::name).collect(Collectors.joining(",")), d.getReason(),
                d.getResolverVersion(), d.getPolicyDigest(), Integer.toString(d.getSourcePartition()),
                Long.toString(d.getSourceOffset()), Boolean.toString(d.getSizeEstimated())) + "\n";
    }

    /** COPY of the decision rows into a migrated, empty schema: the raw PostgreSQL baseline. */
    private double rawCopy(Path rows, String schema) throws Exception {
        try (AuditDatabase db = AuditDatabase.open(pgUrl, pgUser, pgPassword, schema, 2); Connection c = db.dataSource().getConnection();
             InputStream in = new BufferedInputStream(Files.newInputStream(rows), 1 << 20)) {
            CopyManager copy = c.unwrap(PGConnection.class).getCopyAPI();
            long started = System.nanoTime();
            copy.copyIn("COPY " + schema + ".decisions FROM STDIN", in);
            double seconds = (System.nanoTime() - started) / 1e9;
            drop(c, schema);
            return seconds;
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
            lastStaged = registry.counter("pa.store.decisions.staged").count();
            lastPlanRows = registry.counter("pa.store.plan.tensor.rows").count();
            lastPhases.clear();
            registry.find("pa.store.batch.phase").timers().forEach(t -> lastPhases.put(t.getId().getTag("phase"),
                    t.totalTime(TimeUnit.MILLISECONDS)));
            try (Connection c = store.database().dataSource().getConnection()) {
                lastSizes.clear();
                lastSizes.putAll(sizes(c, schema));
                drop(c, schema);
            }
        }
        return seconds;
    }

    /**
     * Fills a schema with {@code queryLoads} loads as the fleet mix leaves them (1,000 deployments of 4 kinds, 4 models,
     * 5 releases, 50 loads of each model per release and deployment; 80 plans of 146 tensors; each load compared with
     * the previous release, its chain entry), then times what users ask: a release diff, a release across the fleet,
     * a deployment's latest loads and one load's tensors. Returns the Markdown section.
     */
    private String queryLatency() throws Exception {
        String schema = "bench_query_" + suffix();
        long perDeployment = 4 * 5 * 50;
        long deployments = Math.max(1, queryLoads / perDeployment);
        long count = deployments * perDeployment;
        String hex = "md5(%1$s) || md5('x' || %1$s)";
        try (AuditDatabase db = AuditDatabase.open(pgUrl, pgUser, pgPassword, schema, 4); Connection c = db.dataSource().getConnection();
             Statement s = c.createStatement()) {
            System.out.printf(Locale.ROOT, "filling %s with %,d loads of %,d deployments...%n", schema, count, deployments);
            long fill = System.nanoTime();
            // Plan p = model * 20 + kind * 5 + release; from release 2 on a seventh of its tensors are off-heap.
            s.execute("INSERT INTO plans SELECT " + String.format(hex, "'p' || g") + ", 146, md5('s' || g) || md5('t' || g) FROM generate_series(0, 79) g");
            s.execute("INSERT INTO plan_tensors SELECT " + String.format(hex, "'p' || (g / 146)") + ", (g % 146)::int, 'blk.' || (g % 146) || '.weight', "
                    + "'Q4_K', 'Q4_K', 'Q4_K', 1048576, 589824, FALSE, CASE WHEN (g / 146) % 5 > 0 AND g % 7 = 0 THEN 'Float32/Dense(4B)' ELSE 'Q4_K' END, "
                    + "CASE WHEN (g / 146) % 5 > 0 AND g % 7 = 0 THEN 4194304 ELSE 589824 END, "
                    + "CASE WHEN (g / 146) % 5 > 0 AND g % 7 = 0 THEN 'HOST_OFFHEAP' ELSE 'MMAP_FILE' END, 'MODEL', TRUE, "
                    + "CASE WHEN (g / 146) % 5 > 0 AND g % 7 = 0 THEN 'REENCODED_AT_LOAD' ELSE 'MAPPED_OK' END, 'MAPPED_OK', '', "
                    + "'blk.' || (g % 146) || '.weight: mapped from the file, 589,824 bytes of Q4_K as stored' FROM generate_series(0, 80 * 146 - 1) g");
            // A load's numbers: d deployment, r release (0..4), m model (0..3), n the load within them (0..49).
            String d = "(g / " + perDeployment + ")";
            String r = "((g % " + perDeployment + ") / 200)";
            String m = "((g % 200) / 50)";
            String n = "(g % 50)";
            String plan = "(" + m + " * 20 + (" + d + " % 4) * 5 + " + r + ")";
            String previousPlan = "(" + m + " * 20 + (" + d + " % 4) * 5 + " + r + " - 1)";
            String loadId = "md5('L' || g)::uuid::text";
            String previousId = "md5('L' || (g - (g % 200) % 50 - 200 + 49))::uuid::text";
            s.execute("INSERT INTO loads (load_id, deployment_id, cluster, host, release_name, model_id, model_name, model_sha256, platform_name, "
                    + "profile_name, occurred_at, tensor_count, stored_bytes, resident_bytes, heap_bytes, offheap_bytes, mapped_bytes, heap_tensors, "
                    + "offheap_tensors, mapped_tensors, resolver_version, policy_digest, resolved_at, complete, completed_at, "
                    + "summary_partition, summary_offset, plan_digest, previous_load_id, previous_release, previous_plan_digest) SELECT "
                    + loadId + ", 'device-' || " + d + ", 'eu-west-1', 'host-' || " + d + ", 'r' || (" + r + " + 1), 'model-' || " + m
                    + ", 'Model ' || " + m + ", " + String.format(hex, "'sha' || " + m) + ", (ARRAY['android','native','jvm','browser'])[" + d
                    + " % 4 + 1], (ARRAY['edge','edge','desktop','desktop'])[" + d + " % 4 + 1], TIMESTAMP WITH TIME ZONE '2026-11-01 00:00:00+00' + "
                    + r + " * INTERVAL '1 day' + " + n + " * INTERVAL '1 minute' + " + d + " * INTERVAL '1 millisecond', 146, 86114304, 86114304, 0, "
                    + "CASE WHEN " + r + " > 0 THEN 88080384 ELSE 0 END, 86114304, 0, CASE WHEN " + r + " > 0 THEN 21 ELSE 0 END, 146, "
                    + "'bench/skainet-1192', " + String.format(hex, "'policy' || (" + d + " % 4)") + ", now(), TRUE, now(), "
                    + "(g % 3)::int, g, " + String.format(hex, "'p' || " + plan) + ", CASE WHEN " + r
                    + " > 0 THEN " + previousId + " END, CASE WHEN " + r + " > 0 THEN 'r' || " + r + " END, CASE WHEN " + r + " > 0 THEN "
                    + String.format(hex, "'p' || " + previousPlan) + " END FROM generate_series(0, " + (count - 1) + ") g");
            // Each release's change, once per pair of plans: a seventh of the tensors re-encoded off the file.
            s.execute("INSERT INTO plan_findings SELECT " + String.format(hex, "'p' || (pair - 1)") + ", " + String.format(hex, "'p' || pair")
                    + ", t / 7, 'LOST_MAPPING', 'blk.' || t || '.weight', 'MMAP_FILE', 'HOST_OFFHEAP', 589824, 4194304, 'Q4_K', 'Float32/Dense(4B)', "
                    + "'mapped', 're-encoded at load' FROM generate_series(0, 79) pair, generate_series(0, 145, 7) t WHERE pair % 5 > 0");
            // Each release's head: its last load (n = 49), as the store keeps them.
            s.execute("INSERT INTO release_heads (" + ReleaseHeads.COLUMNS + ") SELECT "
                    + ReleaseHeads.VALUES + " FROM loads l WHERE l.summary_offset % 50 = 49");
            // An entry as the store writes it: its load's hash and its own, as bytes (the previous hash and the plan are derived).
            s.execute("INSERT INTO chain_entries (deployment_id, seq, load_id, load_hash, entry_hash, encoding) SELECT 'device-' || " + d + ", (g % "
                    + perDeployment + ") + 1, " + loadId + ", decode(" + String.format(hex, "'load' || g") + ", 'hex'), decode("
                    + String.format(hex, "'entry' || g") + ", 'hex'), 2 FROM generate_series(0, " + (count - 1) + ") g");
            // A store holding a million loads has long been vacuumed by autovacuum: measure it settled, not while
            // autovacuum works through rows inserted a second ago.
            s.execute("VACUUM ANALYZE");
            // And its pages written out: a checkpoint spread over the measurements would be measured with them.
            s.execute("CHECKPOINT");
            double fillSeconds = (System.nanoTime() - fill) / 1e9;
            Map<String, Long> sizes = sizes(c, schema);
            long total = sizes.values().stream().mapToLong(Long::longValue).sum();
            System.out.printf(Locale.ROOT, "filled in %.0f s: %s%n", fillSeconds, ByteSizes.format(total));
            AuditQueries queries = new AuditQueries(db.dataSource(), new GrowthRule("off-heap", 10, 1 << 20), new GrowthRule("heap", 10, 1 << 20));
            Random random = new Random(1);
            Map<String, double[]> latencies = new LinkedHashMap<>();
            latencies.put("diff (two releases of a deployment's model)", time(() -> {
                int release = 1 + random.nextInt(4);
                if (queries.diff("device-" + random.nextInt((int) deployments), "model-" + random.nextInt(4), "r" + release, "r" + (release + 1))
                        .isEmpty()) {
                    throw new IllegalStateException("no diff");
                }
            }));
            latencies.put("fleet (one release: " + deployments * 4 + " deployment-models, drift by plan, regressions)", time(() -> {
                if (queries.fleet("r" + (1 + random.nextInt(5))).deployments() == 0) {
                    throw new IllegalStateException("no fleet");
                }
            }));
            latencies.put("where --deployment (its 20 latest loads)", time(() -> {
                if (queries.loads("device-" + random.nextInt((int) deployments), null, null, 20).isEmpty()) {
                    throw new IllegalStateException("no loads");
                }
            }));
            latencies.put("where --load (one load's 146 tensors)", time(() -> {
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
            if (keepQuerySchema) {
                System.out.printf(Locale.ROOT, "kept schema %s for inspection (--keep-schema): DROP SCHEMA %s CASCADE when done%n", schema, schema);
            } else {
                drop(c, schema);
            }
            StringBuilder md = new StringBuilder();
            md.append(String.format(Locale.ROOT, "Queries with %,d loads stored (%,d deployments, 80 plans; filled by SQL and vacuumed in %.0f s): %s in all, "
                    + "**%.2f GB per million loads** (%s). Latency over " + MEASURED + " queries each after " + WARM_UP + " of warm-up (a fresh JVM "
                    + "compiles the query path over its first calls: their median is the last column), in the query API's own process "
                    + "(JDBC to the same PostgreSQL):%n%n| query | p50 ms | p95 ms | p99 ms | max ms | warm-up p50 ms |%n|---|---|---|---|---|---|%n", count,
                    deployments, fillSeconds, ByteSizes.format(total), total * 1e6 / count / 1e9, sizes.entrySet().stream()
                            .filter(e -> e.getValue() > 0).map(e -> e.getKey() + " " + ByteSizes.format(e.getValue())).collect(Collectors.joining(", "))));
            latencies.forEach((what, l) -> md.append(String.format(Locale.ROOT, "| %s | %.1f | %.1f | %.1f | %.1f | %.1f |%n", what, l[0], l[1], l[2],
                    l[3], l[4])));
            return md.toString();
        }
    }

    private interface Query {
        void run() throws Exception;
    }

    /** p50, p95, p99 and max in milliseconds of 200 runs after 20 of warm-up. */
    /** Calls timed per query, after the warm-up calls. */
    private static final int MEASURED = 200;
    /**
     * Calls before those timed: the API serves from a long-running process, and a fresh JVM compiles the query path
     * (the driver's row parsing, the fleet view's grouping) over its first calls, about 70 of the fleet view's.
     */
    private static final int WARM_UP = 100;

    /** p50, p95, p99 and max of the timed calls, then the median of the warm-up calls, in milliseconds. */
    private static double[] time(Query query) throws Exception {
        List<Double> millis = new ArrayList<>();
        List<Double> warmUp = new ArrayList<>();
        for (int i = 0; i < WARM_UP + MEASURED; i++) {
            long t = System.nanoTime();
            query.run();
            (i < WARM_UP ? warmUp : millis).add((System.nanoTime() - t) / 1e6);
        }
        double[] sorted = millis.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return new double[]{sorted[sorted.length / 2], sorted[(int) (sorted.length * 0.95)], sorted[(int) (sorted.length * 0.99)],
                sorted[sorted.length - 1], median(warmUp)};
    }

    /** Bytes per table of the schema, indexes and TOAST included (pg_total_relation_size), largest first. */
    private static Map<String, Long> sizes(Connection c, String schema) throws SQLException {
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
