package dev.placementaudit.service;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

class OpsServerTest {
    private final HttpClient http = HttpClient.newHttpClient();

    @Test
    void servesPrometheusMetricsAndHealthThatFollowsTheService() throws Exception {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        registry.counter("pa.test.events", "kind", "x").increment(3);
        AtomicBoolean up = new AtomicBoolean(true);
        try (OpsServer server = OpsServer.start("127.0.0.1", 0, registry,
                () -> new Health(up.get(), Map.of("partitions", 2)), config -> { })) {
            HttpResponse<String> metrics = get(server, "/metrics");
            HttpResponse<String> healthy = get(server, "/health");
            up.set(false);
            HttpResponse<String> unhealthy = get(server, "/health");

            assertThat(metrics.statusCode()).isEqualTo(200);
            assertThat(metrics.body()).contains("pa_test_events_total{kind=\"x\"} 3.0");
            assertThat(healthy.statusCode()).isEqualTo(200);
            assertThat(healthy.body()).contains("\"status\":\"UP\"").contains("\"partitions\":2");
            assertThat(unhealthy.statusCode()).isEqualTo(503);
            assertThat(unhealthy.body()).contains("\"status\":\"DOWN\"");
        }
    }

    private HttpResponse<String> get(OpsServer server, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path)).build(),
                HttpResponse.BodyHandlers.ofString());
    }
}
