package dev.placementaudit.store;

import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.service.Settings;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.SampleEvents;
import dev.placementaudit.testkit.TestDatabase;
import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.resolution.LoadValidator;
import dev.placementaudit.resolution.Provenance;
import dev.placementaudit.resolution.ResolvedLoad;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One test's topics and database. Decisions are made by the worker's own resolution code and written to the
 * topics as the worker writes them, so the store is tested on exactly what it will consume.
 */
final class StoreHarness {
    static final EventSerde<AllocationDecided> DECISIONS = EventSerde.of(AllocationDecided.class);
    static final EventSerde<LoadResolved> SUMMARIES = EventSerde.of(LoadResolved.class);
    static final Instant T0 = Instant.parse("2026-11-01T00:00:00Z");

    final KafkaBroker broker;
    private final java.util.concurrent.atomic.AtomicLong nextSourceOffset = new java.util.concurrent.atomic.AtomicLong();
    final TestDatabase db;
    final String decisions;
    final String resolved;
    final String observations;
    final String alerts;
    final String chain;
    final String group;
    private final LoadResolution resolution = new LoadResolution("0.1.0/skainet-1192");
    private final LoadValidator validator = new LoadValidator(10_000);

    StoreHarness(KafkaBroker broker, TestDatabase db) {
        this.broker = broker;
        this.db = db;
        String base = KafkaBroker.uniqueTopic("store");
        this.decisions = base + ".decided";
        this.resolved = base + ".resolved";
        this.observations = base + ".observed";
        this.alerts = base + ".alerts";
        this.chain = base + ".chain";
        this.group = "store-" + base;
        broker.createTopics(3, decisions, resolved, observations);
        broker.createTopics(1, alerts, decisions + ".dlq");
    }

    Map<String, String> settings() {
        Map<String, String> s = new HashMap<>();
        s.put("kafka.bootstrap.servers", broker.bootstrapServers());
        s.put("store.decisions.topic", decisions);
        s.put("store.resolved.topic", resolved);
        s.put("store.observations.topic", observations);
        s.put("store.alerts.topic", alerts);
        // The per-load alerts on the topic too, as before incidents: most tests here read them there (IncidentsTest does not).
        s.put("store.alerts.per.load", "true");
        s.put("store.chain.topic", chain);
        s.put("store.group.id", group);
        s.put("store.instance.id", group + "-1");
        s.put("store.jdbc.url", db.jdbcUrl());
        s.put("store.jdbc.user", db.user());
        s.put("store.jdbc.password", db.password());
        s.put("store.poll.timeout", "200ms");
        s.put("store.http.port", "-1");
        s.put("store.rules.offheap.bytes", Long.toString(1 << 20));
        s.put("store.rules.heap.bytes", Long.toString(1 << 20));
        return s;
    }

    /** A worker reading {@code input} and writing this harness's decision topics, as the pipeline tests run it. */
    Map<String, String> workerSettings(String input) {
        return Map.of("kafka.bootstrap.servers", broker.bootstrapServers(), "worker.input.topic", input,
                "worker.decisions.topic", decisions, "worker.resolved.topic", resolved, "worker.group.id", "w-" + input,
                "worker.instance.id", "w-" + input, "worker.http.port", "-1", "worker.poll.timeout", "200ms", "worker.topics.create", "false");
    }

    AuditStore start(Map<String, String> settings) {
        return AuditStore.start(StoreConfig.from(Settings.of(settings)), new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
    }

    AuditStore start() {
        return start(settings());
    }

    AuditStore start(Map<String, String> settings, PrometheusMeterRegistry registry) {
        return AuditStore.start(StoreConfig.from(Settings.of(settings)), registry);
    }

    AuditStore start(Map<String, String> settings, PrometheusMeterRegistry registry, Clock clock) {
        return AuditStore.start(StoreConfig.from(Settings.of(settings)), registry, clock);
    }

    /** A load of {@code q4k} Q4_K layers on an edge device, at {@code hoursAfterT0}, optionally with those layers dequantized. */
    static ModelLoaded load(String deployment, String release, int q4k, int hoursAfterT0, boolean dequantized) {
        ModelLoaded load = SampleEvents.edgeLoad(deployment, release, q4k);
        List<TensorInfo> tensors = new ArrayList<>();
        for (TensorInfo t : load.getTensors()) {
            boolean q = t.getName().startsWith("blk.");
            tensors.add(q && dequantized ? TensorInfo.newBuilder(t).setForm(SampleEvents.dequantizedMapped()).build() : t);
        }
        return ModelLoaded.newBuilder(load).setTensors(tensors).setOccurredAt(T0.plusSeconds(3600L * hoursAfterT0)).build();
    }

    ResolvedLoad resolve(ModelLoaded load) {
        // Each load at the next offset of model-loads, as the worker sees them: a deployment's decisions carry the order of its loads.
        return resolution.resolve(validator.validate(load), new Provenance("model-loads", 0, nextSourceOffset.getAndIncrement()), Instant.now());
    }

    /** Publishes the decisions and summary of each load, the way the worker does (key = deployment). */
    List<ResolvedLoad> publish(List<ModelLoaded> loads) throws Exception {
        List<ResolvedLoad> resolvedLoads = new ArrayList<>();
        Map<String, Object> config = broker.clientConfig();
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer())) {
            for (ModelLoaded load : loads) {
                ResolvedLoad r = resolve(load);
                byte[] key = load.getDeployment().getId().getBytes(StandardCharsets.UTF_8);
                for (AllocationDecided d : r.decisions()) {
                    producer.send(new ProducerRecord<>(decisions, key, DECISIONS.encode(d)));
                }
                producer.send(new ProducerRecord<>(resolved, key, SUMMARIES.encode(r.summary()))).get(10, TimeUnit.SECONDS);
                resolvedLoads.add(r);
            }
        }
        return resolvedLoads;
    }

    /** Publishes these loads as the worker would and waits until the store has completed every one of them. */
    List<ResolvedLoad> publishAndWait(List<ModelLoaded> loads) throws Exception {
        long before = count("SELECT COUNT(*) FROM loads WHERE complete = TRUE");
        List<ResolvedLoad> resolved = publish(loads);
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(60))
                .until(() -> count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == before + loads.size());
        return resolved;
    }

    /**
     * Publishes a load the way the worker would, but with its first decision and its summary changed: content the
     * worker's validation let through (or that never came from the worker) and the database may refuse.
     */
    ResolvedLoad publishTampered(ModelLoaded load, UnaryOperator<AllocationDecided> firstDecision, UnaryOperator<LoadResolved> summary)
            throws Exception {
        ResolvedLoad r = resolve(load);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(broker.clientConfig(), new ByteArraySerializer(), new ByteArraySerializer())) {
            byte[] key = load.getDeployment().getId().getBytes(StandardCharsets.UTF_8);
            List<AllocationDecided> all = r.decisions();
            for (int i = 0; i < all.size(); i++) {
                AllocationDecided d = i == 0 ? firstDecision.apply(all.get(i)) : all.get(i);
                producer.send(new ProducerRecord<>(decisions, key, DECISIONS.encode(d)));
            }
            producer.send(new ProducerRecord<>(resolved, key, SUMMARIES.encode(summary.apply(r.summary()))))
                    .get(10, TimeUnit.SECONDS);
        }
        return r;
    }

    /** Publishes what a runtime measured after a load, keyed like the load (by deployment). */
    void publishObservation(LoadObserved observation) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(broker.clientConfig(), new ByteArraySerializer(), new ByteArraySerializer())) {
            producer.send(new ProducerRecord<>(observations, observation.getDeploymentId().getBytes(StandardCharsets.UTF_8),
                    EventSerde.of(LoadObserved.class).encode(observation))).get(10, TimeUnit.SECONDS);
        }
    }

    /**
     * What a runtime that held its load as planned, plus {@code extraOffHeap} bytes off-heap, would observe; its mapped
     * bytes seen only when {@code mappedSeen}.
     */
    static LoadObserved observation(LoadResolved planned, long extraOffHeap, boolean mappedSeen) {
        return LoadObserved.newBuilder()
                .setLoadId(planned.getLoadId())
                .setDeploymentId(planned.getDeploymentId())
                .setObservedAt(planned.getLoadOccurredAt().plusSeconds(5))
                .setMethod(dev.placementaudit.events.ObservationMethod.newBuilder().setName("test").setRuntime("test").setLimits(List.of()).build())
                .setHeapUsedBeforeBytes(100L << 20).setHeapUsedAfterBytes((100L << 20) + planned.getHeapBytes())
                .setDirectBeforeBytes(1L << 20).setDirectAfterBytes((1L << 20) + planned.getOffHeapBytes() + extraOffHeap)
                .setMappedBeforeBytes(0L).setMappedAfterBytes(mappedSeen ? planned.getMappedBytes() : 0L)
                .build();
    }

    void publishRaw(String topic, byte[] value) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(broker.clientConfig(), new ByteArraySerializer(), new ByteArraySerializer())) {
            producer.send(new ProducerRecord<>(topic, "raw".getBytes(StandardCharsets.UTF_8), value)).get(10, TimeUnit.SECONDS);
        }
    }

    /** The first column of the first row, as text. */
    String string(String sql) throws SQLException {
        try (Connection c = db.connect(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        }
    }

    long count(String sql) throws SQLException {
        try (Connection c = db.connect(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /**
     * Each deployment, model and release with a complete load has one head, and it is the latest of them, with that
     * load's comparison and the regressions it found.
     */
    /** Whether a record on the alerts topic is an incident (keyed by its id) rather than a per-load alert (keyed by deployment). */
    static boolean isIncident(ConsumerRecord<byte[], byte[]> record) {
        return record.key() != null && new String(record.key(), StandardCharsets.UTF_8).startsWith("inc-");
    }

    static void assertReleaseHeads(StoreHarness h) throws java.sql.SQLException {
        org.assertj.core.api.Assertions.assertThat(h.count("SELECT COUNT(*) FROM release_heads")).isEqualTo(h.count(
                "SELECT COUNT(*) FROM (SELECT DISTINCT deployment_id, model_id, release_name FROM loads WHERE complete = TRUE) x"));
        org.assertj.core.api.Assertions.assertThat(h.count("SELECT COUNT(*) FROM release_heads r WHERE NOT EXISTS (SELECT 1 FROM loads l "
                + "WHERE l.load_id = r.load_id AND l.complete = TRUE) OR EXISTS (SELECT 1 FROM loads x WHERE x.complete = TRUE AND "
                + "x.deployment_id = r.deployment_id AND x.model_id = r.model_id AND x.release_name = r.release_name AND (x.summary_partition, "
                + "x.summary_offset) > (r.summary_partition, r.summary_offset))")).as("heads that are not the latest complete load of their release")
                .isZero();
        // A head is a mark on its load's row (V18): exactly one row of each release marked, whichever instance wrote it.
        org.assertj.core.api.Assertions.assertThat(h.count("SELECT COUNT(*) FROM (SELECT deployment_id, model_id, release_name FROM load_rows "
                + "WHERE is_head = TRUE GROUP BY deployment_id, model_id, release_name HAVING COUNT(*) > 1) x"))
                .as("releases with more than one row marked as their head").isZero();
        // Each deployment's latest load of a model (V29): one row marked per deployment and model, the head last in the log.
        org.assertj.core.api.Assertions.assertThat(h.count("SELECT COUNT(*) FROM load_rows WHERE is_latest = TRUE")).isEqualTo(h.count(
                "SELECT COUNT(*) FROM (SELECT DISTINCT deployment_id, model_id FROM loads WHERE complete = TRUE) x"));
        org.assertj.core.api.Assertions.assertThat(h.count("SELECT COUNT(*) FROM load_rows r WHERE r.is_latest = TRUE AND (r.is_head = FALSE OR "
                + "EXISTS (SELECT 1 FROM load_rows x WHERE x.is_head = TRUE AND x.deployment_id = r.deployment_id AND x.model_id = r.model_id "
                + "AND (x.summary_partition, x.summary_offset) > (r.summary_partition, r.summary_offset)))"))
                .as("rows marked latest that are not the last head of their deployment and model").isZero();
        // Every load's id once in load_ids (V30), with its row's time, and no id without its row.
        org.assertj.core.api.Assertions.assertThat(h.count("SELECT COUNT(*) FROM load_ids")).as("load ids").isEqualTo(h.count("SELECT COUNT(*) FROM load_rows"));
        org.assertj.core.api.Assertions.assertThat(h.count("SELECT COUNT(*) FROM load_rows l WHERE NOT EXISTS (SELECT 1 FROM load_ids i "
                + "WHERE i.load_id = l.load_id AND i.occurred_at = l.occurred_at)")).as("load rows whose id and time are not in load_ids").isZero();
    }
}
