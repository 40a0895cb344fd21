package dev.placementaudit.store;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.placementaudit.collector.Collector;
import dev.placementaudit.collector.CollectorConfig;
import dev.placementaudit.collector.Tokens;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.ObservationMethod;
import dev.placementaudit.events.ObservedDomain;
import dev.placementaudit.events.ObservedTensor;
import dev.placementaudit.producer.collect.CollectorClient;
import dev.placementaudit.schemas.EventJson;
import dev.placementaudit.service.Settings;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.EmbeddedKafkaBroker;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TestDatabase;
import dev.placementaudit.worker.WorkerConfig;
import dev.placementaudit.worker.pipeline.ResolverWorker;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPOutputStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Devices that hold no Kafka credentials, end to end: the producer library's client -> the collector over HTTP -> the real
 * worker -> the real store. What a device can do to its batches (send one again after a timeout, keep sending while the
 * broker is down) lands every load exactly once.
 */
@ExtendWith(KafkaBrokerExtension.class)
class CollectorPipelineTest {
    private static final String TOKEN = "fleet-phones-token";
    private final ObjectMapper mapper = new ObjectMapper();

    @TempDir
    Path dir;

    /** The worker, the store and the collector on one broker, with this test's topics. */
    private record Pipeline(StoreHarness h, String input, ResolverWorker worker, AuditStore store, Collector collector) implements AutoCloseable {
        @Override
        public void close() {
            collector.close();
            store.close();
            worker.close();
        }
    }

    private static Pipeline start(KafkaBroker broker, TestDatabase db, Map<String, String> collectorMore) {
        StoreHarness h = new StoreHarness(broker, db);
        String input = KafkaBroker.uniqueTopic("model-loads");
        broker.createTopics(3, input);
        Map<String, String> worker = h.workerSettings(input);
        Map<String, String> store = h.settings();
        store.put("store.loads.topic", input);
        Map<String, String> collector = new HashMap<>(Map.of("kafka.bootstrap.servers", broker.bootstrapServers(), "collector.loads.topic", input,
                "collector.observations.topic", h.observations, "collector.http.port", "0", "collector.fleets", "phones",
                "collector.fleet.phones.token.sha256", Tokens.sha256Hex(TOKEN), "collector.fleet.phones.deployments", "android-*",
                "collector.topics.create", "false"));
        collector.putAll(collectorMore);
        ResolverWorker w = ResolverWorker.start(WorkerConfig.from(Settings.of(worker)), new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
        AuditStore s = h.start(store);
        Collector c = Collector.start(CollectorConfig.from(Settings.of(collector)), new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
        return new Pipeline(h, input, w, s, c);
    }

    private static List<ModelLoaded> loads(int n, String release, int hoursAfterT0) {
        List<ModelLoaded> loads = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            loads.add(StoreHarness.load("android-" + i, release, 2, hoursAfterT0, false));
        }
        return loads;
    }

    private static List<LoadObserved> observations(List<ModelLoaded> loads) {
        return loads.stream().map(l -> LoadObserved.newBuilder().setLoadId(l.getLoadId()).setDeploymentId(l.getDeployment().getId())
                .setObservedAt(Instant.now().truncatedTo(ChronoUnit.MILLIS))
                .setMethod(ObservationMethod.newBuilder().setName("test").setRuntime("test").setLimits(List.of()).build())
                .setDirectBeforeBytes(0L).setDirectAfterBytes(0L).setTensors(List.of())
                .setTensors(List.of(ObservedTensor.newBuilder().setName("output_norm.weight").setDomain(ObservedDomain.MMAP_FILE)
                        .setResidentBytes(8_192).build())).build()).toList();
    }

    private static long tensors(List<ModelLoaded> loads) {
        return loads.stream().mapToLong(l -> l.getTensors().size()).sum();
    }

    private static void assertLandedOnce(StoreHarness h, List<ModelLoaded> loads) throws Exception {
        await().atMost(Duration.ofSeconds(120)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == loads.size()
                && h.count("SELECT COUNT(*) FROM load_observations") == loads.size());
        // Settled, and nothing twice: one load row, one observation and one decision per tensor each.
        await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(10)).until(() -> h.count("SELECT COUNT(*) FROM loads") == loads.size());
        assertThat(h.count("SELECT COUNT(DISTINCT load_id) FROM loads")).isEqualTo(loads.size());
        assertThat(h.count("SELECT COUNT(*) FROM load_observations")).isEqualTo(loads.size());
        assertThat(h.count("SELECT SUM(tensor_count) FROM loads")).isEqualTo(tensors(loads));
    }

    @DatabaseTest
    void devicesReportThroughTheCollectorAndARetriedBatchLandsOnce(KafkaBroker broker, TestDatabase db) throws Exception {
        try (Pipeline p = start(broker, db, Map.of())) {
            List<ModelLoaded> loads = loads(6, "r1", 1);
            CollectorClient client = CollectorClient.builder(URI.create(p.collector().url()), TOKEN).batchSize(4)
                    .registry(new SimpleMeterRegistry()).build();
            CollectorClient.Delivery delivery = client.send(loads, observations(loads));
            assertThat(delivery.accepted()).isEqualTo(12);
            assertThat(delivery.refused()).isEmpty();

            // A device whose first attempt timed out sends the same batch again: the collector publishes it again, and the
            // load id makes it land once.
            ObjectNode batch = mapper.createObjectNode();
            ArrayNode again = batch.putArray("loads");
            loads.subList(0, 3).forEach(l -> again.add(EventJson.write(l)));
            ArrayNode observed = batch.putArray("observations");
            observations(loads.subList(0, 3)).forEach(o -> observed.add(EventJson.write(o)));
            ByteArrayOutputStream gzip = new ByteArrayOutputStream();
            try (GZIPOutputStream zip = new GZIPOutputStream(gzip)) {
                mapper.writeValue(zip, batch);
            }
            for (int attempt = 0; attempt < 2; attempt++) {
                HttpResponse<String> response = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(p.collector().url() + "/v1/loads"))
                        .header("Authorization", "Bearer " + TOKEN).header("Content-Encoding", "gzip")
                        .POST(HttpRequest.BodyPublishers.ofByteArray(gzip.toByteArray())).build(), HttpResponse.BodyHandlers.ofString());
                assertThat(response.statusCode()).as(response.body()).isEqualTo(202);
            }
            assertLandedOnce(p.h(), loads);
        }
    }

    @DatabaseTest
    void aClientThatKeepsSendingWhileTheBrokerIsDownSpoolsAndEverythingLandsOnceWhenItReturns(TestDatabase db) throws Exception {
        try (EmbeddedKafkaBroker broker = EmbeddedKafkaBroker.startPersistent(dir.resolve("kafka"), EmbeddedKafkaBroker.freePort(),
                EmbeddedKafkaBroker.freePort());
             Pipeline p = start(broker, db, Map.of("collector.send.timeout", "2s", "collector.retry.after", "1s"))) {
            PrometheusMeterRegistry devices = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            CollectorClient client = CollectorClient.builder(URI.create(p.collector().url()), TOKEN).batchSize(4)
                    .retries(2, Duration.ofMillis(100), Duration.ofSeconds(1)).spool(dir.resolve("spool"), 1 << 20).registry(devices).build();
            List<ModelLoaded> before = loads(4, "r1", 1);
            assertThat(client.send(before, List.of()).accepted()).isEqualTo(4);

            broker.stop();
            List<ModelLoaded> during = new ArrayList<>();
            for (int round = 0; round < 3; round++) {
                List<ModelLoaded> more = loads(4, "r" + (round + 2), round + 2);
                during.addAll(more);
                CollectorClient.Delivery delivery = client.send(more, observations(more));
                assertThat(delivery.accepted()).as("nothing is acknowledged while the broker is down").isZero();
                assertThat(delivery.spooled()).isEqualTo(8);
            }
            assertThat(client.spooledBatches()).isEqualTo(6);
            assertThat(devices.scrape()).contains("pa_collector_client_batches_spooled_total");

            broker.restart();
            await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofSeconds(1)).until(() -> {
                client.drain();
                return client.spooledBatches() == 0;
            });
            List<ModelLoaded> all = new ArrayList<>(before);
            all.addAll(during);
            // The loads sent before the outage carried no observation: send them now, so every load has one.
            assertThat(client.send(List.of(), observations(before)).accepted()).isEqualTo(4);
            assertLandedOnce(p.h(), all);
        }
    }

    /**
     * A phone's token may send observations for phones' deployments only (the collector's rule), and the store binds an
     * observation to its load's deployment (issue 56): an observation sent with the phones' token, naming a phone, for a
     * load of a kiosk (another fleet's) is dead-lettered, draws no finding, and the kiosk's own observation attaches.
     */
    @DatabaseTest
    void anObservationThroughAnotherFleetsTokenForALoadItDoesNotOwnIsDeadLetteredNotAttached(KafkaBroker broker, TestDatabase db) throws Exception {
        String kiosksToken = "fleet-kiosks-token";
        try (Pipeline p = start(broker, db, Map.of("collector.fleets", "phones,kiosks", "collector.fleet.kiosks.token.sha256", Tokens.sha256Hex(kiosksToken),
                "collector.fleet.kiosks.deployments", "kiosk-*"))) {
            ModelLoaded kiosk = StoreHarness.load("kiosk-1", "r1", 2, 1, false);
            CollectorClient kiosks = CollectorClient.builder(URI.create(p.collector().url()), kiosksToken).registry(new SimpleMeterRegistry()).build();
            assertThat(kiosks.send(List.of(kiosk), List.of()).accepted()).isEqualTo(1);
            await().atMost(Duration.ofSeconds(60)).until(() -> p.h().count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 1);

            // A phone claims the kiosk's load as its own, with a leak of 512 MB.
            LoadObserved forged = LoadObserved.newBuilder(observations(List.of(kiosk)).get(0)).setDeploymentId("android-7").setDirectAfterBytes(512L << 20)
                    .build();
            CollectorClient phones = CollectorClient.builder(URI.create(p.collector().url()), TOKEN).registry(new SimpleMeterRegistry()).build();
            assertThat(phones.send(List.of(), List.of(forged)).accepted()).as("the collector cannot know whose load it is").isEqualTo(1);
            assertThat(kiosks.send(List.of(), observations(List.of(kiosk))).accepted()).isEqualTo(1);

            await().atMost(Duration.ofSeconds(60)).until(() -> p.h().count("SELECT COUNT(*) FROM dead_letters WHERE detail = 'DEPLOYMENT_MISMATCH'") == 1
                    && p.h().count("SELECT COUNT(*) FROM load_observations") == 1);
            assertThat(p.h().count("SELECT COUNT(*) FROM load_observations WHERE deployment_id = 'kiosk-1'")).isEqualTo(1);
            assertThat(p.h().count("SELECT COUNT(*) FROM runtime_findings")).isZero();
        }
    }
}
