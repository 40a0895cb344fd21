package dev.placementaudit.collector;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.ModelRef;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.events.ObservationMethod;
import dev.placementaudit.events.ObservedDomain;
import dev.placementaudit.events.ObservedTensor;
import dev.placementaudit.schemas.EventJson;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.service.ConfigException;
import dev.placementaudit.service.Settings;
import dev.placementaudit.testkit.EmbeddedKafkaBroker;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.SampleEvents;
import dev.placementaudit.testkit.SelfSignedKeystore;
import dev.placementaudit.testkit.TopicReader;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
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
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

@ExtendWith(KafkaBrokerExtension.class)
class CollectorTest {
    static final String PHONES_TOKEN = "phones-secret-token";
    static final String BROWSERS_TOKEN = "browsers-secret-token";
    private final ObjectMapper mapper = new ObjectMapper();
    private final HttpClient http = HttpClient.newHttpClient();

    @TempDir
    Path dir;

    static Map<String, String> settings(String bootstrap, String loads, String observations) {
        Map<String, String> settings = new HashMap<>();
        settings.put("kafka.bootstrap.servers", bootstrap);
        settings.put("collector.loads.topic", loads);
        settings.put("collector.observations.topic", observations);
        settings.put("collector.http.port", "0");
        settings.put("collector.fleets", "phones,browsers");
        settings.put("collector.fleet.phones.token.sha256", Tokens.sha256Hex(PHONES_TOKEN));
        settings.put("collector.fleet.phones.deployments", "android-*");
        settings.put("collector.fleet.browsers.token.sha256", Tokens.sha256Hex(BROWSERS_TOKEN));
        settings.put("collector.fleet.browsers.deployments", "web-1,web-2");
        settings.put("collector.send.timeout", "3s");
        settings.put("collector.retry.after", "2s");
        return settings;
    }

    private Collector start(KafkaBroker broker, Map<String, String> more) {
        String loads = KafkaBroker.uniqueTopic("model-loads");
        Map<String, String> settings = settings(broker.bootstrapServers(), loads, KafkaBroker.uniqueTopic("load-observations"));
        settings.putAll(more);
        return Collector.start(CollectorConfig.from(Settings.of(settings)), new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
    }

    private HttpResponse<String> post(Collector collector, String token, byte[] body, boolean gzip) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(collector.url() + "/v1/loads")).timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofByteArray(gzip ? gzip(body) : body));
        if (token != null) {
            request.header("Authorization", "Bearer " + token);
        }
        if (gzip) {
            request.header("Content-Encoding", "gzip");
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    static byte[] gzip(byte[] body) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (GZIPOutputStream zip = new GZIPOutputStream(out)) {
            zip.write(body);
        }
        return out.toByteArray();
    }

    private byte[] batch(List<ModelLoaded> loads, List<LoadObserved> observations) throws IOException {
        ObjectNode batch = mapper.createObjectNode();
        ArrayNode l = batch.putArray("loads");
        loads.forEach(load -> l.add(EventJson.write(load)));
        ArrayNode o = batch.putArray("observations");
        observations.forEach(observed -> o.add(EventJson.write(observed)));
        return mapper.writeValueAsBytes(batch);
    }

    static LoadObserved observed(ModelLoaded load) {
        return LoadObserved.newBuilder().setLoadId(load.getLoadId()).setDeploymentId(load.getDeployment().getId()).setObservedAt(Instant.now().truncatedTo(ChronoUnit.MILLIS))
                .setMethod(ObservationMethod.newBuilder().setName("test").setRuntime("test").setLimits(List.of()).build())
                .setDirectAfterBytes(0L).setTensors(List.of(ObservedTensor.newBuilder().setName("output_norm.weight")
                        .setDomain(ObservedDomain.HOST_HEAP).setResidentBytes(8_192).build())).build();
    }

    @Test
    void publishesEachValidItemOnceTheBrokerAcknowledgesAndRefusesTheRestItemByItem(KafkaBroker broker) throws Exception {
        try (Collector collector = start(broker, Map.of())) {
            ModelLoaded first = SampleEvents.edgeLoad("android-1", "r1", 2);
            ModelLoaded second = SampleEvents.edgeLoad("android-2", "r1", 2);
            ModelLoaded sample = SampleEvents.edgeLoad("android-3", "r1", 2);
            ModelLoaded negative = ModelLoaded.newBuilder(sample).setModel(ModelRef.newBuilder(sample.getModel()).setSizeBytes(-1).build()).build();
            LoadObserved observation = observed(first);
            HttpResponse<String> response = post(collector, PHONES_TOKEN, batch(List.of(first, negative, second), List.of(observation)), true);

            assertThat(response.statusCode()).as(response.body()).isEqualTo(202);
            JsonNode answer = mapper.readTree(response.body());
            assertThat(answer.get("accepted").asInt()).isEqualTo(3);
            assertThat(answer.get("refused").asInt()).isEqualTo(1);
            JsonNode refused = answer.get("results").get(1);
            assertThat(refused.get("status").asText()).isEqualTo("refused");
            assertThat(refused.get("code").asText()).isEqualTo("NEGATIVE_SIZE");
            assertThat(refused.get("field").asText()).isEqualTo("model.sizeBytes");
            assertThat(refused.get("id").asText()).isEqualTo(negative.getLoadId().toString());
            assertThat(answer.get("results").get(3).get("kind").asText()).isEqualTo("observations");

            List<ConsumerRecord<byte[], byte[]>> loads = TopicReader.readCommitted(broker, configOf(collector).loadsTopic(), 2);
            assertThat(loads).hasSize(2);
            EventSerde<ModelLoaded> serde = EventSerde.of(ModelLoaded.class);
            assertThat(loads.stream().map(r -> serde.decode(r.value()).getLoadId()).toList()).containsExactlyInAnyOrder(first.getLoadId(), second.getLoadId());
            assertThat(loads.stream().map(r -> new String(r.key(), StandardCharsets.UTF_8)).toList()).containsExactlyInAnyOrder("android-1", "android-2");
            assertThat(TopicReader.readCommitted(broker, configOf(collector).observationsTopic(), 1)).singleElement()
                    .satisfies(r -> assertThat(EventSerde.of(LoadObserved.class).decode(r.value())).isEqualTo(observation));
        }
    }

    @Test
    void takesABinaryBatchOfAvroEventsAndPublishesEachAsTheDeviceEncodedIt(KafkaBroker broker) throws Exception {
        try (Collector collector = start(broker, Map.of())) {
            ModelLoaded load = SampleEvents.edgeLoad("android-1", "r1", 2);
            ModelLoaded sample = SampleEvents.edgeLoad("android-2", "r1", 2);
            ModelLoaded negative = ModelLoaded.newBuilder(sample).setModel(ModelRef.newBuilder(sample.getModel()).setSizeBytes(-1).build()).build();
            LoadObserved observation = observed(load);
            byte[] encodedLoad = EventSerde.of(ModelLoaded.class).encode(load);
            HttpResponse<String> response = postAvro(collector, List.of(encodedLoad, EventSerde.of(ModelLoaded.class).encode(negative),
                    EventSerde.of(LoadObserved.class).encode(observation), "not an event".getBytes(StandardCharsets.UTF_8)));

            assertThat(response.statusCode()).as(response.body()).isEqualTo(202);
            JsonNode results = mapper.readTree(response.body()).get("results");
            assertThat(results.get(0).get("status").asText()).isEqualTo("accepted");
            assertThat(results.get(1).get("code").asText()).isEqualTo("NEGATIVE_SIZE");
            assertThat(results.get(2).get("kind").asText()).isEqualTo("observations");
            assertThat(results.get(3).get("code").asText()).isEqualTo("UNDECODABLE");
            assertThat(results.get(3).get("index").asInt()).isEqualTo(3);
            assertThat(TopicReader.readCommitted(broker, configOf(collector).loadsTopic(), 1)).singleElement()
                    .satisfies(r -> assertThat(r.value()).as("published as the device encoded it").isEqualTo(encodedLoad));
            assertThat(TopicReader.readCommitted(broker, configOf(collector).observationsTopic(), 1)).singleElement()
                    .satisfies(r -> assertThat(EventSerde.of(LoadObserved.class).decode(r.value())).isEqualTo(observation));

            HttpResponse<String> cut = http.send(HttpRequest.newBuilder(URI.create(collector.url() + "/v1/loads"))
                    .header("Authorization", "Bearer " + PHONES_TOKEN).header("Content-Type", "application/vnd.placement-audit.batch+avro")
                    .POST(HttpRequest.BodyPublishers.ofByteArray(new byte[]{0, 0, 1, 0, 1, 2})).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(cut.statusCode()).isEqualTo(400);
            assertThat(cut.body()).contains("frame 0 is cut short: 256 bytes announced");
        }
    }

    @Test
    void aLoadOfALayoutCheckedBeforeIsStillCheckedForWhatIsItsOwn(KafkaBroker broker) throws Exception {
        try (Collector collector = start(broker, Map.of())) {
            EventSerde<ModelLoaded> serde = EventSerde.of(ModelLoaded.class);
            ModelLoaded first = SampleEvents.edgeLoad("android-1", "r1", 2);
            List<TensorInfo> twice = List.of(first.getTensors().get(0), first.getTensors().get(0));
            HttpResponse<String> seen = postAvro(collector, List.of(serde.encode(first), serde.encode(SampleEvents.load("android-4", "r1", twice))));
            assertThat(codes(seen)).containsExactly("accepted", "DUPLICATE_TENSOR tensors[1].name");

            // The same layout (tensors, platform, profile) as the first load's, each wrong in what is its own.
            ModelLoaded second = SampleEvents.edgeLoad("android-2", "r2", 2);
            ModelLoaded blankRelease = ModelLoaded.newBuilder(SampleEvents.edgeLoad("android-3", "r1", 2)).setRelease(" ").build();
            ModelLoaded longHost = SampleEvents.edgeLoad("android-5", "r1", 2);
            longHost.getDeployment().put("host", "h".repeat(201));
            ModelLoaded badLabel = ModelLoaded.newBuilder(SampleEvents.edgeLoad("android-6", "r1", 2)).setLabels(Map.of("note", "a\u0000b")).build();
            List<ModelLoaded> known = List.of(second, blankRelease, longHost, badLabel, SampleEvents.load("android-7", "r1", twice));
            HttpResponse<String> avro = postAvro(collector, known.stream().map(serde::encode).toList());

            List<String> codes = codes(avro);
            assertThat(codes.subList(0, 3)).containsExactly("accepted", "MISSING_FIELD release", "TOO_LONG deployment.host");
            assertThat(codes.get(3)).startsWith("UNSTORABLE_TEXT labels");
            assertThat(codes.get(4)).isEqualTo("DUPLICATE_TENSOR tensors[1].name");
            assertThat(codes).as("as the JSON path answers, which decodes and checks every load whole").isEqualTo(codes(post(collector, PHONES_TOKEN,
                    batch(List.of(SampleEvents.edgeLoad("android-2", "r2", 2), blankRelease, longHost, badLabel, SampleEvents.load("android-7", "r1", twice)),
                            List.of()), true)));
            assertThat(TopicReader.readCommitted(broker, configOf(collector).loadsTopic(), 3)).extracting(r -> serde.decode(r.value()).getDeployment().getId())
                    .as("the two accepted Avro loads as sent, and the JSON batch's one").containsExactlyInAnyOrder("android-1", "android-2", "android-2");
        }
    }

    private HttpResponse<String> postAvro(Collector collector, List<byte[]> events) throws Exception {
        ByteArrayOutputStream frames = new ByteArrayOutputStream();
        java.io.DataOutputStream out = new java.io.DataOutputStream(frames);
        for (byte[] event : events) {
            out.writeInt(event.length);
            out.write(event);
        }
        return http.send(HttpRequest.newBuilder(URI.create(collector.url() + "/v1/loads"))
                .header("Authorization", "Bearer " + PHONES_TOKEN).header("Content-Type", "application/vnd.placement-audit.batch+avro")
                .header("Content-Encoding", "gzip").POST(HttpRequest.BodyPublishers.ofByteArray(gzip(frames.toByteArray()))).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** Each item's result: "accepted", or its code and field. */
    private List<String> codes(HttpResponse<String> response) throws IOException {
        List<String> codes = new ArrayList<>();
        for (JsonNode result : mapper.readTree(response.body()).get("results")) {
            codes.add(result.get("status").asText().equals("accepted") ? "accepted" : result.get("code").asText() + " " + result.get("field").asText());
        }
        return codes;
    }

    @Test
    void anItemThatDoesNotFitItsSchemaDoesNotDerailTheItemsAfterIt(KafkaBroker broker) throws Exception {
        try (Collector collector = start(broker, Map.of())) {
            ObjectNode malformed = EventJson.write(SampleEvents.edgeLoad("android-1", "r1", 2));
            // Wrong deep inside: a nested object and an array follow the fault within the same item.
            ((ObjectNode) malformed.get("tensors").get(0)).putArray("form").add(1);
            ModelLoaded next = SampleEvents.edgeLoad("android-2", "r1", 2);
            ObjectNode batch = mapper.createObjectNode();
            batch.putArray("loads").add(malformed).add(EventJson.write(next)).add("not even an object");
            HttpResponse<String> response = post(collector, PHONES_TOKEN, mapper.writeValueAsBytes(batch), true);
            assertThat(response.statusCode()).as(response.body()).isEqualTo(202);
            JsonNode results = mapper.readTree(response.body()).get("results");
            assertThat(results.get(0).get("code").asText()).isEqualTo("MALFORMED");
            assertThat(results.get(0).get("field").asText()).isEqualTo("tensors[0].form");
            assertThat(results.get(1).get("status").asText()).isEqualTo("accepted");
            assertThat(results.get(1).get("id").asText()).isEqualTo(next.getLoadId().toString());
            assertThat(results.get(2).get("code").asText()).isEqualTo("MALFORMED");
        }
    }

    @Test
    void aBatchWhoseEveryItemIsRefusedIsA422AndPublishesNothing(KafkaBroker broker) throws Exception {
        try (Collector collector = start(broker, Map.of())) {
            ObjectNode malformed = EventJson.write(SampleEvents.edgeLoad("android-1", "r1", 1));
            ((ObjectNode) malformed.get("tensors").get(0)).put("storedBytes", "lots");
            byte[] body = mapper.writeValueAsBytes(mapper.createObjectNode().set("loads", mapper.createArrayNode().add(malformed)));
            HttpResponse<String> response = post(collector, PHONES_TOKEN, body, false);
            assertThat(response.statusCode()).isEqualTo(422);
            JsonNode result = mapper.readTree(response.body()).get("results").get(0);
            assertThat(result.get("code").asText()).isEqualTo("MALFORMED");
            assertThat(result.get("field").asText()).isEqualTo("tensors[0].storedBytes");
        }
    }

    @Test
    void refusesWithTheStatusADeviceActsOn(KafkaBroker broker) throws Exception {
        try (Collector collector = start(broker, Map.of("collector.fleet.browsers.rate.per.second", "1", "collector.fleet.browsers.rate.burst", "1",
                "collector.max.body.bytes", "65536"))) {
            byte[] phones = batch(List.of(SampleEvents.edgeLoad("android-1", "r1", 1)), List.of());
            HttpResponse<String> none = post(collector, null, phones, false);
            assertThat(none.statusCode()).isEqualTo(401);
            assertThat(none.headers().firstValue("WWW-Authenticate")).hasValueSatisfying(v -> assertThat(v).startsWith("Bearer"));
            assertThat(post(collector, "not-a-token", phones, false).statusCode()).isEqualTo(401);

            // A token of fleet A cannot write fleet B: the whole batch is refused, nothing published.
            HttpResponse<String> forbidden = post(collector, BROWSERS_TOKEN, batch(List.of(SampleEvents.edgeLoad("web-1", "r1", 1),
                    SampleEvents.edgeLoad("android-1", "r1", 1)), List.of()), false);
            assertThat(forbidden.statusCode()).isEqualTo(403);
            assertThat(forbidden.body()).contains("fleet browsers may not write deployment 'android-1' (loads[1])");

            // The browsers' rate is one request a second: the next is a 429 saying how long to wait.
            HttpResponse<String> limited = post(collector, BROWSERS_TOKEN, phones, false);
            assertThat(limited.statusCode()).isEqualTo(429);
            assertThat(limited.headers().firstValue("Retry-After")).hasValueSatisfying(v -> assertThat(Integer.parseInt(v)).isBetween(1, 2));

            byte[] huge = new byte[100_000];
            assertThat(post(collector, PHONES_TOKEN, huge, false).statusCode()).isEqualTo(413);
            // A small gzip body that would inflate past the bound is refused the same way.
            byte[] bomb = ("{\"loads\": [" + " ".repeat(200_000) + "]}").getBytes(StandardCharsets.UTF_8);
            HttpResponse<String> inflated = post(collector, PHONES_TOKEN, bomb, true);
            assertThat(gzip(bomb).length).isLessThan(65_536);
            assertThat(inflated.statusCode()).isEqualTo(413);
            assertThat(inflated.body()).contains("inflates to over 65536 bytes");

            assertThat(post(collector, PHONES_TOKEN, "{not json".getBytes(StandardCharsets.UTF_8), false).statusCode()).isEqualTo(400);
            assertThat(post(collector, PHONES_TOKEN, "{}".getBytes(StandardCharsets.UTF_8), false).body()).contains("no loads and no observations");
            HttpResponse<String> metrics = http.send(HttpRequest.newBuilder(URI.create(collector.url() + "/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(metrics.body()).contains("pa_collector_requests_total{status=\"401\"} 2.0", "pa_collector_requests_total{status=\"429\"} 1.0");
        }
    }

    @Test
    void aBrokerThatDoesNotAcknowledgeIsA503WithRetryAfterNeverA202(@TempDir Path data) throws Exception {
        try (EmbeddedKafkaBroker broker = EmbeddedKafkaBroker.startPersistent(data, EmbeddedKafkaBroker.freePort(), EmbeddedKafkaBroker.freePort());
             Collector collector = start(broker, Map.of())) {
            byte[] body = batch(List.of(SampleEvents.edgeLoad("android-1", "r1", 1)), List.of());
            assertThat(post(collector, PHONES_TOKEN, body, true).statusCode()).isEqualTo(202);
            broker.stop();
            // Five items, one send timeout (3 s): the first that cannot be sent ends the batch, the rest do not each wait as long.
            long sending = System.nanoTime();
            HttpResponse<String> down = post(collector, PHONES_TOKEN, batch(List.of(SampleEvents.edgeLoad("android-1", "r1", 1),
                    SampleEvents.edgeLoad("android-2", "r1", 1), SampleEvents.edgeLoad("android-3", "r1", 1), SampleEvents.edgeLoad("android-4", "r1", 1),
                    SampleEvents.edgeLoad("android-5", "r1", 1)), List.of()), true);
            assertThat(Duration.ofNanos(System.nanoTime() - sending)).isLessThan(Duration.ofSeconds(6));
            assertThat(down.statusCode()).as(down.body()).isEqualTo(503);
            assertThat(down.headers().firstValue("Retry-After")).contains("2");
            // While it counts as down, a sender learns at once rather than after the send timeout.
            long started = System.nanoTime();
            assertThat(post(collector, PHONES_TOKEN, body, true).statusCode()).isEqualTo(503);
            assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(1));
            HttpResponse<String> health = http.send(HttpRequest.newBuilder(URI.create(collector.url() + "/health")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(health.statusCode()).isEqualTo(503);
            broker.restart();
            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofSeconds(1))
                    .until(() -> post(collector, PHONES_TOKEN, body, true).statusCode() == 202);
        }
    }

    @Test
    void servesOverTlsWithAKeystoreMadeHere(KafkaBroker broker) throws Exception {
        Path keystore = SelfSignedKeystore.create(dir.resolve("collector.p12"), "changeit");
        try (Collector collector = start(broker, Map.of("collector.http.tls.keystore", keystore.toString(),
                "collector.http.tls.keystore.password", "changeit"))) {
            assertThat(collector.url()).startsWith("https://");
            HttpClient trusting = HttpClient.newBuilder().sslContext(SelfSignedKeystore.trusting(keystore, "changeit")).build();
            HttpResponse<String> response = trusting.send(HttpRequest.newBuilder(URI.create(collector.url() + "/v1/loads"))
                    .header("Authorization", "Bearer " + PHONES_TOKEN)
                    .POST(HttpRequest.BodyPublishers.ofByteArray(batch(List.of(SampleEvents.edgeLoad("android-9", "r1", 1)), List.of()))).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(response.statusCode()).as(response.body()).isEqualTo(202);
            assertThatThrownBy(() -> http.send(HttpRequest.newBuilder(URI.create(collector.url() + "/health")).build(),
                    HttpResponse.BodyHandlers.ofString())).as("a client that does not trust the certificate").isInstanceOf(IOException.class);
        }
    }

    @Test
    void aBrowserPageOfAConfiguredOriginMayPostWithItsToken(KafkaBroker broker) throws Exception {
        try (Collector collector = start(broker, Map.of("collector.http.cors.origins", "https://app.example.com"))) {
            HttpResponse<String> preflight = http.send(HttpRequest.newBuilder(URI.create(collector.url() + "/v1/loads"))
                    .method("OPTIONS", HttpRequest.BodyPublishers.noBody()).header("Origin", "https://app.example.com")
                    .header("Access-Control-Request-Method", "POST")
                    .header("Access-Control-Request-Headers", "authorization,content-encoding,content-type").build(), HttpResponse.BodyHandlers.ofString());
            assertThat(preflight.statusCode()).isEqualTo(200);
            assertThat(preflight.headers().firstValue("Access-Control-Allow-Origin")).contains("https://app.example.com");
            assertThat(preflight.headers().firstValue("Access-Control-Allow-Headers").orElse("").toLowerCase())
                    .contains("authorization", "content-encoding");
            HttpResponse<String> other = http.send(HttpRequest.newBuilder(URI.create(collector.url() + "/v1/loads"))
                    .method("OPTIONS", HttpRequest.BodyPublishers.noBody()).header("Origin", "https://evil.example.com")
                    .header("Access-Control-Request-Method", "POST").build(), HttpResponse.BodyHandlers.ofString());
            assertThat(other.headers().firstValue("Access-Control-Allow-Origin")).isEmpty();
        }
    }

    @Test
    void servesTheOpenApiDocumentKeptInDocs(KafkaBroker broker) throws Exception {
        Path doc = Path.of("..", "docs", "collector-openapi.json");
        assertThat(Files.readString(doc)).as("regenerate: java -cp ... dev.placementaudit.collector.OpenApi > docs/collector-openapi.json")
                .isEqualTo(OpenApi.text());
        try (Collector collector = start(broker, Map.of())) {
            HttpResponse<String> served = http.send(HttpRequest.newBuilder(URI.create(collector.url() + "/openapi.json")).build(),
                    HttpResponse.BodyHandlers.ofString());
            JsonNode api = mapper.readTree(served.body());
            assertThat(api.get("openapi").asText()).startsWith("3.");
            assertThat(api.get("paths").get("/v1/loads").get("post").get("responses").fieldNames()).toIterable()
                    .containsExactly("202", "400", "401", "403", "413", "422", "429", "503");
            assertThat(api.get("components").get("schemas").get("TensorInfo").get("required").toString()).contains("storedBytes");
        }
    }

    @Test
    void refusesSettingsThatWouldLeakTokensOrConfuseFleets() {
        Map<String, String> open = settings("127.0.0.1:9", "l", "o");
        open.put("collector.http.host", "0.0.0.0");
        assertThatThrownBy(() -> CollectorConfig.from(Settings.of(open))).isInstanceOf(ConfigException.class)
                .hasMessageContaining("no TLS is configured");
        Map<String, String> shared = settings("127.0.0.1:9", "l", "o");
        shared.put("collector.fleet.browsers.token.sha256", Tokens.sha256Hex(PHONES_TOKEN));
        assertThatThrownBy(() -> CollectorConfig.from(Settings.of(shared))).hasMessageContaining("is another fleet's token too");
        Map<String, String> clear = settings("127.0.0.1:9", "l", "o");
        clear.put("collector.fleet.phones.token.sha256", PHONES_TOKEN);
        assertThatThrownBy(() -> CollectorConfig.from(Settings.of(clear))).hasMessageContaining("not the token");
        assertThat(new Tokens(CollectorConfig.from(Settings.of(settings("127.0.0.1:9", "l", "o"))).fleets())
                .fleetOf("bearer " + BROWSERS_TOKEN)).hasValueSatisfying(f -> assertThat(f.name()).isEqualTo("browsers"));
    }

    private static CollectorConfig configOf(Collector collector) {
        return collector.config();
    }
}
