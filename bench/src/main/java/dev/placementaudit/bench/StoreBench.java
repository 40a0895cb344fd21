package dev.placementaudit.bench;

import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.producer.simulate.Drift;
import dev.placementaudit.producer.simulate.FleetSimulator;
import dev.placementaudit.producer.simulate.ModelCatalog;
import dev.placementaudit.producer.simulate.ObservedRuntime;
import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.resolution.LoadValidator;
import dev.placementaudit.resolution.Provenance;
import dev.placementaudit.resolution.ResolvedLoad;
import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.service.PhaseTimers;
import dev.placementaudit.service.Settings;
import dev.placementaudit.store.AuditStore;
import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.store.db.AuditDatabase;
import dev.placementaudit.store.db.Sql;
import dev.placementaudit.store.ingest.BatchPhase;
import dev.placementaudit.testkit.KafkaBroker;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
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
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.StreamSupport;

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
        BenchOptions options = new BenchOptions(args);
        String storeHeap = options.given("store-heap");
        String bootstrap = System.getenv("KAFKA_BOOTSTRAP_SERVERS");
        if (bootstrap == null) {
            throw new IllegalStateException("run through bench/run.sh store, which starts a broker");
        }
        StoreBench bench = new StoreBench(bootstrap, options);
        if (storeHeap != null) {
            bench.heapRun(storeHeap);
        } else if (options.given("grow") != null) {
            new GrowthBench(bench.pg, options.list("grow").stream().map(Long::parseLong).toList(), bench::ingestRound).run();
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
    private final boolean keepQuerySchema;
    /** --query-layout deployment: the query fill's rows one deployment's after another's, not in the order loads happened. */
    private final boolean queryByDeployment;
    /** With --keep-schema: the last ingest run's schema stays too, to look at its tables. */
    private boolean keepIngestSchema;
    private final Postgres pg = Postgres.fromEnvironment();
    /**
     * Seconds from the store's start to its first committed batch in each run: its schema's migrations validated, the
     * broker and the consumer group joined, a first poll decoded and written. A store pays it once; the runs here pay
     * it each.
     */
    private final List<Double> startups = new ArrayList<>();
    private double lastStartup;
    /**
     * Seconds each run's schema took to migrate, empty, before the store started on it (the raw COPY's schema is
     * migrated before its clock starts too): not in the store's seconds, reported beside them.
     */
    private final List<Double> migrations = new ArrayList<>();
    private double lastMigration;
    /** Milliseconds the last ingest run's batches spent per phase. */
    private final Map<String, Double> lastPhases = new LinkedHashMap<>();

    /** Database size after the last ingest run: bytes per table (pg_total_relation_size, indexes and TOAST included). */
    private final Map<String, Long> lastSizes = new LinkedHashMap<>();
    /** Rows the last ingest run staged and plan tensor rows it wrote (pa_store_decisions_staged, pa_store_plan_tensor_rows). */
    private double lastStaged;
    private double lastPlanRows;
    /** The last run's incidents (and open ones), the events it published on placement-alerts, those still due, and per-load alert rows. */
    private long lastIncidents;
    private long lastOpenIncidents;
    private double lastEvents;
    private long lastPending;
    private long lastAlertRows;

    /**
     * Every device also reports what it did (docs/observations.md): each load carries the runtime's decisions, and a
     * LoadObserved follows it; r3 leaks 512 MB off-heap, so a third of the loads raise UNPLANNED_OFFHEAP.
     */
    private final boolean observe;
    private long lastRuntimeFindings;
    /** The fleet's seed and first load's time: the growth bench publishes new loads each round. */
    private int seed = 7;
    private Instant start = Instant.parse("2026-11-01T00:00:00Z");
    /** The chain topic, when one outlives a run (the growth bench's store verifies across its rounds); else the run's own. */
    private String chainTopic;

    private StoreBench(String bootstrap, BenchOptions options) {
        this.bootstrap = bootstrap;
        this.mix = options.text("mix", "fleet");
        if (!List.of("fleet", "distinct").contains(mix)) {
            throw new IllegalArgumentException("--mix is fleet (4 models x 3 releases x 4 deployment kinds: plans repeat) or distinct "
                    + "(every load its own plan), not " + mix);
        }
        this.loads = options.integer("loads", mix.equals("fleet") ? 20_000 : 2_000);
        this.runs = options.integer("runs", 3);
        this.queryLoads = options.number("query-loads", 1_000_000);
        this.keepQuerySchema = options.flag("keep-schema");
        this.observe = options.flag("observe");
        String layout = options.text("query-layout", "time");
        if (!layout.equals("time") && !layout.equals("deployment")) {
            throw new IllegalArgumentException("--query-layout is time (rows in the order the loads happened, as a store appends them) or deployment");
        }
        this.queryByDeployment = layout.equals("deployment");
    }

    private void run() throws Exception {
        if (runs == 0) {
            // --runs 0: the query latencies alone.
            String md = new QueryLatency(pg, queryLoads, keepQuerySchema, queryByDeployment).measure() + "\n" + new UpgradeTiming(pg, queryLoads).measure();
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
            copy.add(rawCopy(copyRows, "bench_copy_" + run + "_" + Postgres.suffix()));
            keepIngestSchema = keepQuerySchema && run == runs;
            store.add(ingest(base, "bench_store_" + run + "_" + Postgres.suffix()));
            startups.add(lastStartup);
            migrations.add(lastMigration);
            System.out.printf(Locale.ROOT, "run %d  raw COPY %.2f s (%.0f rows/s)   audit-store %.2f s (%.0f decisions/s); incidents %d, events %.0f "
                    + "(+%d due); database %s%n", run, copy.get(run - 1), stream.decisions() / copy.get(run - 1), store.get(run - 1),
                    stream.decisions() / store.get(run - 1), lastIncidents, lastEvents, lastPending, lastSizes);
        }
        Files.deleteIfExists(copyRows);
        double copyMedian = median(copy);
        double storeMedian = median(store);
        StringBuilder md = new StringBuilder();
        md.append("# audit-store benchmark, ").append(LocalDateTime.now().format(DateTimeFormatter.ISO_LOCAL_DATE_TIME)).append("\n\n");
        md.append(String.format(Locale.ROOT, "`bench/run.sh store --mix %s --loads %d --runs %d --query-loads %d%s`: %s%s. %,d loads, %,d decisions, "
                        + "%d distinct placement plans; median of %d runs; PostgreSQL at %s; %d cores.%n%n", mix, loads, runs, queryLoads,
                observe ? " --observe true" : "",
                mix.equals("fleet") ? "a fleet of 4 catalog models x 3 releases (r2 dequantizes ffn_down) x 4 deployment kinds (profiles, platforms)"
                        : "every load its own plan (one tensor renamed per load): the first-seen path alone",
                observe ? String.format(Locale.ROOT, "; every device reports its own decisions and publishes a LoadObserved after its load "
                        + "(r3 leaks 512 MB off-heap: %,d runtime findings in the last run), and the store's run ends once every observation is in too",
                        lastRuntimeFindings) : "", stream.loads(), stream.decisions(),
                stream.plans(), runs, pg.url(), Runtime.getRuntime().availableProcessors()));
        md.append("| mode | seconds | decisions/s | ratio to raw COPY |\n|---|---|---|---|\n");
        md.append(String.format(Locale.ROOT, "| raw COPY of the same per-decision rows (pre-rendered, into the decisions table and its indexes) | %.2f | %.0f | 1.00 |%n",
                copyMedian, stream.decisions() / copyMedian));
        md.append(String.format(Locale.ROOT, "| audit-store ingest from Kafka (exactly once, plans, completeness, diffs, chain) | %.2f | %.0f | **%.2f** |%n",
                storeMedian, stream.decisions() / storeMedian, copyMedian / storeMedian));
        List<Double> steady = new ArrayList<>();
        for (int i = 0; i < store.size(); i++) {
            steady.add(store.get(i) - startups.get(i));
        }
        List<Double> migrated = new ArrayList<>();
        for (int i = 0; i < store.size(); i++) {
            migrated.add(store.get(i) + migrations.get(i));
        }
        md.append(String.format(Locale.ROOT, "%nPer run, ratio to the raw `COPY`: %s. Each run's schema is migrated before the store starts on it, "
                        + "as the `COPY`'s is before its clock starts (%s s, not counted; counted, the median ratio would be %.2f).%n",
                perRun(copy, store), joined(migrations), copyMedian / median(migrated)));
        md.append(String.format(Locale.ROOT, "%nStart-up, from the store's start to its first committed batch (its schema's migrations validated, "
                        + "broker and group joined, a first poll written), in each run: %s s; each run pays it, a running store once. Without it (from "
                        + "the first commit to the last record read, median %.2f s): **%.2f** of the raw `COPY` (per run %s). The ratio above includes it.%n",
                joined(startups), median(steady),
                copyMedian / median(steady), perRun(copy, steady)));
        md.append(String.format(Locale.ROOT, "%nThe last run staged %,.0f decision rows and wrote %,.0f plan tensor rows (pa_store_decisions_staged, "
                + "pa_store_plan_tensor_rows).%n", lastStaged, lastPlanRows));
        md.append(String.format(Locale.ROOT, "%nIncidents after the last run: **%d** (%d open), one per cause across the fleet. Events on "
                + "placement-alerts: **%.0f** published while it ingested (PlacementIncident: opened at once, other changes at most once a minute "
                + "per incident), %d incident(s) with an update still due when the run ended: at most **%.0f** events in all, %.1f per incident "
                + "(goal <= 3). Per-load alerts recorded (not published; store.alerts.per.load is off): %,d.%n", lastIncidents, lastOpenIncidents,
                lastEvents, lastPending, lastEvents + lastPending, (lastEvents + lastPending) / Math.max(1, lastIncidents), lastAlertRows));
        double phaseTotal = lastPhases.values().stream().mapToDouble(Double::doubleValue).sum();
        md.append("\nWhere the last run's batches spent their time (pa_store_batch_phase_seconds, ms): ");
        for (BatchPhase phase : BatchPhase.values()) {
            String label = PhaseTimers.label(phase);
            double ms = lastPhases.getOrDefault(label, 0.0);
            md.append(String.format(Locale.ROOT, "%s %.0f (%.0f%%) ", label, ms, 100 * ms / Math.max(1, phaseTotal)));
        }
        md.append(String.format(Locale.ROOT, "; in batches %.0f ms of the run's %.0f ms.%n", phaseTotal, storeMedian * 1000));
        long total = lastSizes.values().stream().mapToLong(Long::longValue).sum();
        md.append(String.format(Locale.ROOT, "%nDatabase after the last run (pg_total_relation_size, indexes included): %,d bytes for %,d loads, "
                + "%,.0f bytes per load: **%.2f GB per million loads** at this mix. By table: %s.%n", total, stream.loads(),
                (double) total / stream.loads(), total * 1e6 / stream.loads() / 1e9, lastSizes.entrySet().stream()
                        .filter(e -> e.getValue() > 0).map(e -> e.getKey() + " " + ByteSizes.format(e.getValue())).collect(Collectors.joining(", "))));
        long perPlanOrCause = lastSizes.entrySet().stream().filter(e -> PER_PLAN_OR_CAUSE.contains(e.getKey())).mapToLong(Map.Entry::getValue).sum();
        md.append(String.format(Locale.ROOT, "Of that, %s is in tables that grow with distinct plans and causes, not with loads (%s: %d plans "
                        + "and %d incidents here, as many at a million loads of this mix); the rest, %,.0f bytes per load, is **%.2f GB per million "
                        + "loads** with those counted once.%n", ByteSizes.format(perPlanOrCause), String.join(", ", PER_PLAN_OR_CAUSE), stream.plans(),
                lastIncidents, (double) (total - perPlanOrCause) / stream.loads(), ((double) (total - perPlanOrCause) * 1e6 / stream.loads()
                        + perPlanOrCause) / 1e9));
        if (queryLoads > 0) {
            md.append("\n").append(new QueryLatency(pg, queryLoads, keepQuerySchema, queryByDeployment).measure());
            md.append("\n").append(new UpgradeTiming(pg, queryLoads).measure());
        }
        System.out.println();
        System.out.println(md);
        Path file = Path.of("bench", "results", "store-" + mix + (observe ? "-observed" : "") + "-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + ".md");
        Files.createDirectories(file.getParent());
        Files.writeString(file, md.toString());
        System.out.println("written to " + file);
    }

    /**
     * The tables whose rows are per plan, per pair of plans or per cause (and the schema's own bookkeeping): their
     * size does not scale with the number of loads at a fixed mix.
     */
    private static final List<String> PER_PLAN_OR_CAUSE = List.of("plans", "plan_tensor_arrays", "plan_findings", "alert_texts", "incidents",
            "incident_acks", "load_builds", "growth_budgets", "flyway_schema_history");

    /**
     * One round of the growth bench: the fleet mix's loads (seed 7 + round, from {@code from} on) published to topics of
     * their own, a raw COPY of their decisions into an empty schema, then the store ingesting them into {@code schema},
     * which it keeps; with {@code alsoEmpty}, into an empty schema too first (dropped after), for the ratio at an empty
     * store in the same run. Returns the COPY's seconds, the store's, the loads, and the store's into the empty schema.
     */
    private double[] ingestRound(String schema, int round, String chain, Instant from, boolean alsoEmpty) throws Exception {
        seed = 7 + round;
        start = from;
        chainTopic = chain;
        String base = KafkaBroker.uniqueTopic("bench-grow");
        Path copyRows = Files.createTempFile("pa-bench-copy", ".tsv");
        try {
            Stream stream = publish(base, copyRows);
            double copy = rawCopy(copyRows, "bench_copy_" + Postgres.suffix());
            double empty = Double.NaN;
            if (alsoEmpty) {
                keepIngestSchema = false;
                chainTopic = null;
                empty = ingest(base, "bench_empty_" + Postgres.suffix());
                chainTopic = chain;
            }
            keepIngestSchema = true;
            double store = ingest(base, schema);
            return new double[]{copy, store, stream.loads(), empty};
        } finally {
            Files.deleteIfExists(copyRows);
        }
    }

    /** What was published. */
    private record Stream(int loads, long decisions, int plans) {
    }

    /** The store as its own process with a bounded heap ({@code --store-heap 256m}), ingesting the same records at full rate. */
    private void heapRun(String heap) throws Exception {
        String base = KafkaBroker.uniqueTopic("bench-heap");
        Path unused = Files.createTempFile("pa-bench-copy", ".tsv");
        long decisions = publish(base, unused).decisions();
        Files.delete(unused);
        new StoreHeapRun(bootstrap, pg, loads).run(heap, base, decisions);
    }

    /** The loads of the mix, in the order a fleet would load them. */
    private Iterable<ModelLoaded> fleet() {
        Instant t0 = start;
        if (mix.equals("fleet")) {
            List<String> releases = List.of("r1", "r2", "r3");
            int deployments = (loads + 11) / 12;
            FleetSimulator fleet = new FleetSimulator(seed, deployments, releases, ModelCatalog.ALL,
                    List.of(Drift.parse("r2:dequantize=*ffn_down*", releases)), t0);
            // The first `loads` of them, one at a time: a fill of 100,000 loads does not fit in the heap at once.
            return () -> StreamSupport.stream(fleet.spliterator(), false).limit(loads).iterator();
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
        EventSerde<LoadObserved> observations = EventSerde.of(LoadObserved.class);
        List<String> releases = List.of("r1", "r2", "r3");
        ObservedRuntime runtime = observe ? new ObservedRuntime(List.of(Drift.parse("r3:leak=512MB", releases)), releases) : null;
        // A record the producer gives up on fails the run, named, rather than leaving the store's wait for every load
        // to hang (a run at 3.1 million lost 2 loads' records to a leader change and waited forever).
        java.util.concurrent.atomic.AtomicReference<Exception> lost = new java.util.concurrent.atomic.AtomicReference<>();
        org.apache.kafka.clients.producer.Callback failed = (metadata, e) -> {
            if (e != null) {
                lost.compareAndSet(null, e);
            }
        };
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer());
             Writer rows = Files.newBufferedWriter(copyRows, StandardCharsets.UTF_8)) {
            for (ModelLoaded simulated : fleet()) {
                ObservedRuntime.Report report = runtime == null ? null : runtime.report(simulated);
                ModelLoaded load = report == null ? simulated : report.load();
                ResolvedLoad r = resolution.resolve(validator.validate(load), new Provenance("model-loads", 0, count), Instant.now());
                byte[] key = r.summary().getDeploymentId().getBytes(StandardCharsets.UTF_8);
                if (report != null) {
                    producer.send(new ProducerRecord<>(base + ".observed", key, observations.encode(report.observation())), failed);
                }
                for (byte[] decision : r.encodedDecisions()) {
                    producer.send(new ProducerRecord<>(base + ".decided", key, decision), failed);
                }
                producer.send(new ProducerRecord<>(base + ".resolved", key, summaries.encode(r.summary())), failed);
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
        if (lost.get() != null) {
            throw new IllegalStateException("the bench's publish to " + base + " lost records: " + lost.get(), lost.get());
        }
        return new Stream(count, decisions, plans.size());
    }

    /** The records published to these topics: the sum of their partitions' end offsets (the bench's producer is not transactional). */
    private long endOffsets(List<String> topics) throws Exception {
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            admin.describeTopics(topics).allTopicNames().get().forEach((topic, description) -> description.partitions()
                    .forEach(p -> latest.put(new TopicPartition(topic, p.partition()), OffsetSpec.latest())));
            long sum = 0;
            for (ListOffsetsResult.ListOffsetsResultInfo info : admin.listOffsets(latest).all().get().values()) {
                sum += info.offset();
            }
            return sum;
        }
    }

    private void createTopics(String base) throws Exception {
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            admin.createTopics(List.of(new NewTopic(base + ".decided", 3, (short) 1),
                    new NewTopic(base + ".resolved", 3, (short) 1),
                    new NewTopic(base + ".observed", 3, (short) 1),
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
        try (AuditDatabase db = pg.open(schema, 2); Connection c = db.dataSource().getConnection();
             InputStream in = new BufferedInputStream(Files.newInputStream(rows), 1 << 20)) {
            CopyManager copy = c.unwrap(PGConnection.class).getCopyAPI();
            long started = System.nanoTime();
            copy.copyIn("COPY " + schema + ".decisions FROM STDIN", in);
            double seconds = (System.nanoTime() - started) / 1e9;
            Postgres.drop(c, schema);
            return seconds;
        }
    }

    private double ingest(String base, String schema) throws Exception {
        Map<String, String> settings = new HashMap<>();
        settings.put("kafka.bootstrap.servers", bootstrap);
        settings.put("store.decisions.topic", base + ".decided");
        settings.put("store.resolved.topic", base + ".resolved");
        settings.put("store.observations.topic", base + ".observed");
        settings.put("store.alerts.topic", base + ".alerts");
        settings.put("store.chain.topic", chainTopic != null ? chainTopic : base + ".chain");
        settings.put("store.group.id", schema);
        settings.put("store.jdbc.url", pg.url());
        settings.put("store.jdbc.user", pg.user());
        settings.put("store.jdbc.password", pg.password());
        settings.put("store.jdbc.schema", schema);
        settings.put("store.http.port", "-1");
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        List<String> topics = new ArrayList<>(List.of(base + ".decided", base + ".resolved"));
        if (observe) {
            topics.add(base + ".observed");
        }
        long published = endOffsets(topics);
        double seconds;
        // The schema migrated first, as the raw COPY's is: what both are timed on is the same, migrated, empty schema.
        long migrating = System.nanoTime();
        try (AuditDatabase migrated = pg.open(schema, 2)) {
            lastMigration = (System.nanoTime() - migrating) / 1e9;
        }
        long started = System.nanoTime();
        long firstCommit = -1;
        try (AuditStore store = AuditStore.start(StoreConfig.from(Settings.of(settings)), registry)) {
            while (registry.counter("pa.store.loads.completed").count() < loads) {
                firstCommit = firstCommit >= 0 ? firstCommit : committed(registry);
                Thread.sleep(5);
            }
            firstCommit = firstCommit >= 0 ? firstCommit : committed(registry);
            // The run ends once every record is read and committed with the rows, not when the last load completes: a
            // load whose plan is stored completes from its summary alone, and its decisions (still to be read and
            // checked against the plan) may come long after. Until 2026-12-04 the clock stopped at the last completion.
            // Observations, on their own topic, are committed with their offsets too: the same wait covers them.
            try (Connection c = store.database().dataSource().getConnection();
                 PreparedStatement s = c.prepareStatement("SELECT COALESCE(SUM(next_offset), 0) FROM " + schema + ".ingest_offsets WHERE topic IN ("
                         + String.join(", ", Collections.nCopies(topics.size(), "?")) + ")")) {
                for (int i = 0; i < topics.size(); i++) {
                    s.setString(i + 1, topics.get(i));
                }
                while (true) {
                    try (ResultSet rs = s.executeQuery()) {
                        rs.next();
                        if (rs.getLong(1) >= published) {
                            break;
                        }
                    }
                    Thread.sleep(5);
                }
            }
            seconds = (System.nanoTime() - started) / 1e9;
            lastStartup = firstCommit < 0 ? seconds : (firstCommit - started) / 1e9;
            lastStaged = registry.counter("pa.store.decisions.staged").count();
            lastPlanRows = registry.counter("pa.store.plan.tensor.rows").count();
            lastPhases.clear();
            registry.find("pa.store.batch.phase").timers().forEach(t -> lastPhases.put(t.getId().getTag("phase"),
                    t.totalTime(TimeUnit.MILLISECONDS)));
            lastEvents = registry.counter("pa.store.alerts.published").count();
            try (Connection c = store.database().dataSource().getConnection()) {
                lastIncidents = Sql.number(c, "SELECT COUNT(*) FROM " + schema + ".incidents");
                lastOpenIncidents = Sql.number(c, "SELECT COUNT(*) FROM " + schema + ".incidents WHERE state = 'OPEN'");
                lastPending = Sql.number(c, "SELECT COUNT(*) FROM " + schema + ".incidents WHERE published_version IS NULL OR published_version < version");
                lastAlertRows = Sql.number(c, "SELECT COUNT(*) FROM " + schema + ".alerts");
                lastRuntimeFindings = Sql.number(c, "SELECT COUNT(*) FROM " + schema + ".runtime_findings");
                lastSizes.clear();
                lastSizes.putAll(Postgres.sizes(c, schema));
                if (keepIngestSchema) {
                    System.out.println("kept schema " + schema + " (--keep-schema)");
                } else {
                    Postgres.drop(c, schema);
                }
            }
        }
        return seconds;
    }

    /** Now, if the store has committed a batch (a phase timer has counted one), else -1: the run's first commit. */
    private static long committed(PrometheusMeterRegistry registry) {
        boolean any = registry.find("pa.store.batch.phase").timers().stream().anyMatch(t -> t.count() > 0);
        return any ? System.nanoTime() : -1;
    }

    /** Each run's ratio of the raw COPY's seconds to these, as "0.47, 0.99, 1.49". */
    private static String perRun(List<Double> copy, List<Double> seconds) {
        return joined(IntStream.range(0, seconds.size()).mapToObj(i -> copy.get(i) / seconds.get(i)).toList());
    }

    /** Figures as "0.47, 0.99, 1.49". */
    private static String joined(List<Double> values) {
        return values.stream().map(v -> String.format(Locale.ROOT, "%.2f", v)).collect(Collectors.joining(", "));
    }

    static double median(List<Double> values) {
        double[] sorted = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return sorted[sorted.length / 2];
    }
}
