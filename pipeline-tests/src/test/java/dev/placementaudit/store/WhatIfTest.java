package dev.placementaudit.store;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.placementaudit.core.format.BlockQuant;
import dev.placementaudit.core.format.Dense;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.PlatformCapabilities;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.schemas.EventType;
import dev.placementaudit.service.Settings;
import dev.placementaudit.store.replay.WhatIf;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TestDatabase;
import dev.placementaudit.worker.WorkerConfig;
import dev.placementaudit.worker.pipeline.ResolverWorker;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.generic.GenericRecordBuilder;
import org.apache.avro.message.BinaryMessageEncoder;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.extension.ExtendWith;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** What-if over the real pipeline: loads go through the worker into the store, then history is re-resolved. */
@ExtendWith(KafkaBrokerExtension.class)
class WhatIfTest {
    private static final UUID OLD_LOAD = UUID.fromString("01d00000-0000-4000-8000-000000000001");

    @DatabaseTest
    void reportsWhatACandidatePolicyWouldMoveWithoutTouchingHistory(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        String input = h.decisions.replace(".decided", ".loads");
        broker.createTopics(2, input);
        Map<String, String> storeSettings = h.settings();
        storeSettings.put("store.loads.topic", input);
        storeSettings.put("store.http.port", "0");
        try (ResolverWorker worker = startWorker(broker, h, input)) {
            send(broker, input, List.of(StoreHarness.load("early", "r1", 2, 0, false)));
            send(broker, input, List.of(StoreHarness.load("a", "r1", 2, 1, false), StoreHarness.load("b", "r1", 2, 2, false)));
            sendRaw(broker, input, v1Load());
            try (AuditStore store = h.start(storeSettings)) {
                await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 4);
            }
        }
        // Loaded after the worker stopped: in the log, not in the projection.
        send(broker, input, List.of(StoreHarness.load("c", "r1", 2, 3, false)));
        long decisionsBefore = h.count("SELECT COUNT(*) FROM load_tensors");
        WhatIf whatIf = new WhatIf(db.dataSource(), Map.of("bootstrap.servers", broker.bootstrapServers()), input);
        WhatIf.CandidatePolicy noQ4K = new WhatIf.CandidatePolicy(OptionalLong.empty(), Optional.of(Set.of(new Dense(4), BlockQuant.Q6_K)),
                Optional.empty(), Optional.empty());

        WhatIf.Report report = whatIf.run(new WhatIf.Query(Instant.EPOCH, Instant.now(), null, null, noQ4K));
        WhatIf.Report unchanged = whatIf.run(new WhatIf.Query(Instant.EPOCH, Instant.now(), null, null,
                new WhatIf.CandidatePolicy(OptionalLong.empty(), Optional.empty(), Optional.empty(), Optional.empty())));

        assertThat(report.loads()).isEqualTo(5);
        assertThat(report.changed()).as("two Q4_K weights in each of three edge loads, one in the v1 load").isEqualTo(2 + 2 + 2 + 1);
        assertThat(report.added()).as("load c was never resolved").isEqualTo(4);
        assertThat(report.deltaByDomain()).containsEntry("MMAP_FILE", -7 * 589_824L).containsEntry("HOST_OFFHEAP", 7 * 589_824L);
        assertThat(report.summary()).startsWith("if servable [Dense(4B), Q6_K] had shipped: 7 of ")
                .contains("off-heap +3 MB").contains("mapped -3 MB");
        assertThat(report.changes()).filteredOn(c -> c.change() == WhatIf.Change.CHANGED).allSatisfy(c -> {
            assertThat(c.beforeDomain()).isEqualTo("MMAP_FILE");
            assertThat(c.afterDomain()).isEqualTo("HOST_OFFHEAP");
            assertThat(c.afterReason()).contains("no loader/kernel serves Q4_K");
        });
        assertThat(report.deployments()).extracting(WhatIf.DeploymentTotals::deploymentId).containsExactly("a", "b", "c", "early", "old-runtime");
        assertThat(unchanged.changed()).as("the recorded policy reproduces the recorded decisions").isZero();
        assertThat(h.count("SELECT COUNT(*) FROM load_tensors")).as("history untouched").isEqualTo(decisionsBefore);
    }

    @DatabaseTest
    void thePreShipGateFailsOnACauseTheFleetDoesNotHaveAndPassesOnOneItHasOpen(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        String input = h.decisions.replace(".decided", ".loads");
        broker.createTopics(2, input);
        Map<String, String> storeSettings = h.settings();
        storeSettings.put("store.loads.topic", input);
        String[] cli = CliRun.settings(h);
        String[] gate = {"--loads-topic", input, "--servable", "Dense(4B),Q6_K", "--gate"};
        try (ResolverWorker worker = startWorker(broker, h, input); AuditStore store = h.start(storeSettings)) {
            send(broker, input, List.of(StoreHarness.load("a", "r1", 2, 1, false), StoreHarness.load("b", "r1", 2, 2, false)));
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 2);

            // Without Q4_K among the mapped-servable encodings, a's and b's Q4_K weights would lose their mapping: a cause
            // the fleet has no incident for.
            CliRun blocked = CliRun.run(cli, "whatif", gate);
            assertThat(blocked.exit()).as(blocked.out() + blocked.err()).isEqualTo(1);
            assertThat(blocked.out()).contains("gate: BLOCKED - of 2 deployments' latest loads, 2 would be planned differently; 1 cause(s) would "
                    + "open a new incident").contains("NEW   sample-model r1 -> candidate  LOST_MAPPING  on 2 deployment(s)")
                    .contains("why: 2 tensors ");
            assertThat(CliRun.run(cli, "whatif", "--loads-topic", input, "--gate").exit()).as("the recorded policy moves nothing").isZero();

            // r2 ships that very change on a: the fleet now has the incident open, so the candidate brings nothing new.
            ModelLoaded r2 = StoreHarness.load("a", "r2", 2, 3, false);
            send(broker, input, List.of(ModelLoaded.newBuilder(r2).setPlatform(PlatformCapabilities.newBuilder(r2.getPlatform())
                    .setMappedServableEncodings(List.of("Dense(4B)", "Q6_K")).build()).build()));
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM incidents WHERE state = 'OPEN'") == 1);
            CliRun known = CliRun.run(cli, "whatif", gate);
            assertThat(known.exit()).as(known.out() + known.err()).isZero();
            assertThat(known.out()).contains("gate: pass - of 2 deployments' latest loads, 1 would be planned differently; 0 cause(s)")
                    .contains("known sample-model r1 -> candidate  LOST_MAPPING  on 1 deployment(s)").contains("(open today as inc-");
        }
    }

    @DatabaseTest
    void aTimeRangeSelectsLoadsByWhenTheyWereLogged(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        String input = h.decisions.replace(".decided", ".loads");
        broker.createTopics(1, input);
        send(broker, input, List.of(StoreHarness.load("before", "r1", 1, 0, false)));
        Instant from = clockPast(Instant.now());
        clockPast(from);
        send(broker, input, List.of(StoreHarness.load("after", "r1", 1, 1, false)));
        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(30)).until(() -> store.state() == dev.placementaudit.store.ingest.IngestLoop.State.RUNNING);
        }
        Map<String, String> settings = h.settings();
        settings.put("store.loads.topic", input);
        settings.put("store.http.port", "0");

        try (AuditStore store = h.start(settings)) {
            HttpResponse<String> response = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + store.port()
                    + "/api/whatif?from=" + from + "&threshold=1048576")).build(), HttpResponse.BodyHandlers.ofString());
            HttpResponse<String> bad = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + store.port()
                    + "/api/whatif?servable=Q9_Z")).build(), HttpResponse.BodyHandlers.ofString());

            assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
            JsonNode report = new ObjectMapper().readTree(response.body());
            assertThat(report.get("loads").asInt()).isEqualTo(1);
            assertThat(report.get("deployments").get(0).get("deploymentId").asText()).isEqualTo("after");
            assertThat(report.get("policy").asText()).isEqualTo("off-heap threshold 1 MB");
            assertThat(bad.statusCode()).isEqualTo(400);
            assertThat(bad.body()).contains("Q9_Z");
        }
    }

    /** Waits until the wall clock is a millisecond past {@code instant} (record timestamps are milliseconds). */
    private static Instant clockPast(Instant instant) {
        await().atMost(Duration.ofSeconds(1)).pollInterval(Duration.ofMillis(1)).until(() -> Instant.now().toEpochMilli() > instant.toEpochMilli());
        return Instant.now();
    }

    private static ResolverWorker startWorker(KafkaBroker broker, StoreHarness h, String input) {
        Map<String, String> settings = new HashMap<>(Map.of("kafka.bootstrap.servers", broker.bootstrapServers(), "worker.input.topic", input,
                "worker.decisions.topic", h.decisions, "worker.resolved.topic", h.resolved, "worker.group.id", "w-" + input,
                "worker.instance.id", "w-" + input, "worker.http.port", "-1", "worker.poll.timeout", "200ms"));
        return ResolverWorker.start(WorkerConfig.from(Settings.of(settings)), new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
    }

    private static void send(KafkaBroker broker, String topic, List<ModelLoaded> loads) throws Exception {
        EventSerde<ModelLoaded> serde = EventSerde.of(ModelLoaded.class);
        for (ModelLoaded load : loads) {
            sendRaw(broker, topic, serde.encode(load));
        }
    }

    private static void sendRaw(KafkaBroker broker, String topic, byte[] value) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(broker.clientConfig(), new ByteArraySerializer(), new ByteArraySerializer())) {
            producer.send(new ProducerRecord<>(topic, "k".getBytes(StandardCharsets.UTF_8), value)).get(10, TimeUnit.SECONDS);
        }
    }

    /** A load as a runtime built before schema v2 existed would have written it: no labels, no producer. */
    private static byte[] v1Load() throws Exception {
        Schema v1 = EventType.MODEL_LOADED.history().get(0);
        Schema tensor = v1.getField("tensors").schema().getElementType();
        Schema form = tensor.getField("form").schema().getTypes().get(1);
        GenericRecord mapped = new GenericRecordBuilder(form)
                .set("encoding", new GenericData.EnumSymbol(form.getField("encoding").schema(), "KEEP"))
                .set("byteOrder", new GenericData.EnumSymbol(form.getField("byteOrder").schema(), "AS_STORED"))
                .set("shapeOrientation", new GenericData.EnumSymbol(form.getField("shapeOrientation").schema(), "AS_STORED"))
                .set("residency", new GenericData.EnumSymbol(form.getField("residency").schema(), "MAPPED")).build();
        GenericRecord load = new GenericRecordBuilder(v1)
                .set("loadId", OLD_LOAD.toString())
                .set("occurredAt", Instant.parse("2025-06-01T00:00:00Z").toEpochMilli())
                .set("deployment", new GenericRecordBuilder(v1.getField("deployment").schema()).set("id", "old-runtime").set("cluster", "c").set("host", "h").build())
                .set("release", "r0")
                .set("model", new GenericRecordBuilder(v1.getField("model").schema()).set("id", "sample-model").set("name", "Sample")
                        .set("sizeBytes", 589_824L).set("fileFormat", new GenericData.EnumSymbol(v1.getField("model").schema().getField("fileFormat").schema(), "GGUF")).build())
                .set("platform", new GenericRecordBuilder(v1.getField("platform").schema()).set("name", "android").set("supportsMappedFiles", true)
                        .set("supportsOffHeap", true).set("mappedServableEncodings", List.of("Q4_K", "Dense(4B)")).build())
                .set("profile", new GenericRecordBuilder(v1.getField("profile").schema()).set("name", "edge").set("offHeapThresholdBytes", 262_144L)
                        .set("reserveBytes", 0L).set("weightsMapped", true).set("strict", false).build())
                .set("tensors", List.of(new GenericRecordBuilder(tensor).set("name", "blk.0.attn_q.weight").set("dtype", "FP32").set("encoding", "Q4_K")
                        .set("shape", List.of(1_048_576L)).set("elementCount", 1_048_576L).set("storedBytes", 589_824L).set("form", mapped).build()))
                .build();
        ByteBuffer buffer = new BinaryMessageEncoder<GenericRecord>(GenericData.get(), v1).encode(load);
        byte[] bytes = new byte[buffer.remaining()];
        buffer.get(bytes);
        return bytes;
    }
}
