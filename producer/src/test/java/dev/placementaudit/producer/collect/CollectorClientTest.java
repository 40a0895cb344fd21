package dev.placementaudit.producer.collect;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.testkit.SampleEvents;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.zip.GZIPInputStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The client's own behaviour against a scripted collector: what it retries, how long it waits, what it keeps, in what order. */
class CollectorClientTest {
    private final ObjectMapper mapper = new ObjectMapper();
    /** What the scripted collector answers next (status, Retry-After or null); 202 accepting everything when empty. */
    private final ConcurrentLinkedDeque<Object[]> script = new ConcurrentLinkedDeque<>();
    /** The load ids of every batch the collector accepted, in arrival order. */
    private final List<String> accepted = new CopyOnWriteArrayList<>();
    private final List<Duration> slept = new ArrayList<>();
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private HttpServer server;

    @TempDir
    Path dir;

    @BeforeEach
    void start() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/v1/loads", exchange -> {
            byte[] body;
            try (InputStream in = new GZIPInputStream(exchange.getRequestBody())) {
                body = in.readAllBytes();
            }
            assertThat(exchange.getRequestHeaders().getFirst("Authorization")).isEqualTo("Bearer t0ken");
            Object[] next = script.poll();
            int status = next == null ? 202 : (Integer) next[0];
            String answer;
            if (status == 202) {
                JsonNode batch = mapper.readTree(body);
                StringBuilder results = new StringBuilder();
                for (JsonNode load : batch.get("loads")) {
                    accepted.add(load.get("loadId").asText());
                    results.append(results.isEmpty() ? "" : ",").append("{\"kind\":\"loads\",\"status\":\"accepted\"}");
                }
                answer = "{\"accepted\":" + batch.get("loads").size() + ",\"refused\":0,\"results\":[" + results + "]}";
            } else {
                answer = "{\"error\":\"scripted " + status + "\"}";
                if (next[1] != null) {
                    exchange.getResponseHeaders().add("Retry-After", next[1].toString());
                }
            }
            byte[] bytes = answer.getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(status, bytes.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        });
        server.start();
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    private CollectorClient.Builder client() {
        return CollectorClient.builder(URI.create("http://127.0.0.1:" + server.getAddress().getPort()), "t0ken")
                .retries(3, Duration.ofMillis(100), Duration.ofSeconds(1)).sleeper(slept::add).registry(registry).format(CollectorClient.Format.JSON);
    }

    private static List<ModelLoaded> loads(int n) {
        List<ModelLoaded> loads = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            loads.add(SampleEvents.edgeLoad("android-" + i, "r1", 1));
        }
        return loads;
    }

    private static List<String> ids(List<ModelLoaded> loads) {
        return loads.stream().map(l -> l.getLoadId().toString()).toList();
    }

    @Test
    void sendsInBatchesAndRetriesHonouringRetryAfter() throws Exception {
        script.add(new Object[]{503, 7});
        script.add(new Object[]{429, null});
        List<ModelLoaded> loads = loads(5);
        CollectorClient.Delivery delivery = client().batchSize(2).build().send(loads, List.of());
        assertThat(delivery.accepted()).isEqualTo(5);
        assertThat(accepted).containsExactlyElementsOf(ids(loads));
        // The 503's Retry-After wins over a shorter backoff; the 429 without one waits the second attempt's jittered backoff.
        assertThat(slept).hasSize(2);
        assertThat(slept.get(0)).isEqualTo(Duration.ofSeconds(7));
        assertThat(slept.get(1)).isBetween(Duration.ofMillis(100), Duration.ofMillis(200));
    }

    @Test
    void keepsWhatCannotBeDeliveredAndDeliversItFirstAndInOrderAfterARestart() throws Exception {
        for (int i = 0; i < 6; i++) {
            script.add(new Object[]{503, 1});
        }
        List<ModelLoaded> first = loads(2);
        List<ModelLoaded> second = loads(2);
        CollectorClient offline = client().batchSize(2).spool(dir, 1 << 20).build();
        assertThat(offline.send(first, List.of()).spooled()).isEqualTo(2);
        // The second batch finds the first still waiting (its one more attempt fails too) and queues behind it.
        assertThat(offline.send(second, List.of()).spooled()).isEqualTo(2);
        assertThat(offline.spooledBatches()).isEqualTo(2);
        assertThat(accepted).isEmpty();
        assertThat(registry.counter("pa_collector_client_batches_spooled", "collector", "127.0.0.1:" + server.getAddress().getPort()).count())
                .isEqualTo(2);

        script.clear();
        // A new client on the same spool (the runtime restarted) delivers the kept batches first, in order, then the new one.
        List<ModelLoaded> third = loads(1);
        CollectorClient.Delivery delivery = client().batchSize(2).spool(dir, 1 << 20).build().send(third, List.of());
        assertThat(delivery.drainedBatches()).isEqualTo(2);
        assertThat(delivery.accepted()).isEqualTo(5);
        List<String> expected = new ArrayList<>(ids(first));
        expected.addAll(ids(second));
        expected.addAll(ids(third));
        assertThat(accepted).containsExactlyElementsOf(expected);
        assertThat(Files.list(dir).filter(f -> f.toString().endsWith(".gz")).count()).isZero();
    }

    @Test
    void aFullSpoolIsAnErrorTheRuntimeSeesAndAMetric() throws Exception {
        for (int i = 0; i < 20; i++) {
            script.add(new Object[]{503, 1});
        }
        CollectorClient client = client().retries(1, Duration.ofMillis(1), Duration.ofMillis(1)).spool(dir, 1_200).build();
        client.send(loads(1), List.of());
        assertThatThrownBy(() -> {
            for (int i = 0; i < 10; i++) {
                client.send(loads(1), List.of());
            }
        }).isInstanceOf(Spool.SpoolFullException.class).hasMessageContaining("over its 1200 bytes");
        assertThat(registry.get("pa_collector_client_spool_full").counter().count()).isEqualTo(1);
        assertThat(client.spooledBatches()).isGreaterThanOrEqualTo(1);
    }

    @Test
    void aBatchRefusedForGoodIsAnErrorNotRetriedNorSpooled() throws Exception {
        script.add(new Object[]{403, null});
        CollectorClient client = client().spool(dir, 1 << 20).build();
        assertThatThrownBy(() -> client.send(loads(1), List.of())).isInstanceOf(CollectorException.class)
                .hasMessageContaining("refused the batch (403): scripted 403")
                .satisfies(e -> assertThat(((CollectorException) e).retriable()).isFalse());
        assertThat(slept).isEmpty();
        assertThat(client.spooledBatches()).isZero();
    }

    @Test
    void aSpooledBatchRefusedForGoodIsSetAsideWithItsReason() throws Exception {
        script.add(new Object[]{503, 1});
        CollectorClient client = client().retries(1, Duration.ofMillis(1), Duration.ofMillis(1)).spool(dir, 1 << 20).build();
        client.send(loads(1), List.of());
        script.add(new Object[]{413, null});
        assertThatThrownBy(client::drain).isInstanceOf(CollectorException.class);
        assertThat(client.spooledBatches()).isZero();
        assertThat(Files.readString(dir.resolve("refused").resolve("00000000000000000001.json.gz.reason.txt"))).contains("(413)");
        assertThat(client.drain().drainedBatches()).isZero();
    }

    @Test
    void withoutASpoolAnUndeliverableBatchIsARetriableError() {
        server.stop(0);
        CollectorClient client = client().build();
        assertThatThrownBy(() -> client.send(loads(1), List.of())).isInstanceOf(CollectorException.class)
                .hasMessageContaining("after 3 attempts (connection refused), and no spool is configured")
                .satisfies(e -> assertThat(((CollectorException) e).retriable()).isTrue());
        assertThat(slept).hasSize(2);
    }
}
