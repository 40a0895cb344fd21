package dev.placementaudit.service;

import dev.placementaudit.testkit.SelfSignedKeystore;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.net.ssl.SSLHandshakeException;
import java.net.ConnectException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class OpsServerTest {
    private final HttpClient http = HttpClient.newHttpClient();
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);

    @TempDir
    Path dir;

    @Test
    void servesPrometheusMetricsAndHealthThatFollowsTheService() throws Exception {
        registry.counter("pa.test.events", "kind", "x").increment(3);
        AtomicBoolean up = new AtomicBoolean(true);
        try (OpsServer server = OpsServer.start(HttpSettings.loopback(0), registry,
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

    @Test
    void everyResponseCarriesTheSecurityHeadersAndUnknownPathsAndMethodsAnswerInJson() throws Exception {
        try (OpsServer server = OpsServer.start(HttpSettings.loopback(0), registry, () -> new Health(true, Map.of()), config -> { })) {
            HttpResponse<String> health = get(server, "/health");
            HttpResponse<String> missing = get(server, "/nothing/here");
            HttpResponse<String> wrongMethod = http.send(HttpRequest.newBuilder(URI.create(server.url() + "/health"))
                    .DELETE().build(), HttpResponse.BodyHandlers.ofString());
            HttpResponse<String> crossOrigin = http.send(HttpRequest.newBuilder(URI.create(server.url() + "/health"))
                    .header("Origin", "https://evil.example").build(), HttpResponse.BodyHandlers.ofString());

            for (HttpResponse<String> response : List.of(health, missing, wrongMethod, crossOrigin)) {
                assertThat(response.headers().firstValue("X-Content-Type-Options")).as(response.uri().toString()).contains("nosniff");
                assertThat(response.headers().firstValue("Referrer-Policy")).contains("no-referrer");
                assertThat(response.headers().firstValue("X-Frame-Options")).contains("DENY");
            }
            assertThat(missing.statusCode()).isEqualTo(404);
            assertThat(missing.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("application/json"));
            assertThat(missing.body()).isEqualTo("{\"error\":\"no such path: GET /nothing/here\"}");
            assertThat(wrongMethod.statusCode()).isEqualTo(405);
            assertThat(wrongMethod.body()).isEqualTo("{\"error\":\"method DELETE not allowed on /health\"}");
            assertThat(crossOrigin.headers().firstValue("Access-Control-Allow-Origin")).as("no CORS unless configured").isEmpty();
        }
    }

    @Test
    void corsIsAnsweredOnlyForTheConfiguredOrigins() throws Exception {
        HttpSettings settings = new HttpSettings("127.0.0.1", 0, Optional.empty(), Optional.empty(), false, List.of("https://grafana.example"));
        try (OpsServer server = OpsServer.start(settings, registry, () -> new Health(true, Map.of()), config -> { })) {
            HttpResponse<String> allowed = http.send(HttpRequest.newBuilder(URI.create(server.url() + "/health"))
                    .header("Origin", "https://grafana.example").build(), HttpResponse.BodyHandlers.ofString());
            HttpResponse<String> other = http.send(HttpRequest.newBuilder(URI.create(server.url() + "/health"))
                    .header("Origin", "https://evil.example").build(), HttpResponse.BodyHandlers.ofString());

            assertThat(allowed.headers().firstValue("Access-Control-Allow-Origin")).contains("https://grafana.example");
            assertThat(other.headers().firstValue("Access-Control-Allow-Origin")).isEmpty();
        }
    }

    @Test
    void listensOnLoopbackUnlessConfiguredOtherwise() throws Exception {
        HttpSettings defaults = HttpSettings.from(Settings.of(Map.of()), "svc", 0);
        assertThat(defaults.host()).isEqualTo("127.0.0.1");
        assertThat(defaults.loopbackOnly()).isTrue();
        try (OpsServer server = OpsServer.start(defaults, registry, () -> new Health(true, Map.of()), config -> { })) {
            assertThat(get(server, "/health").statusCode()).isEqualTo(200);
            // From any other address of this machine, nothing listens.
            List<InetAddress> others = Collections.list(NetworkInterface.getNetworkInterfaces()).stream()
                    .flatMap(NetworkInterface::inetAddresses).filter(a -> a instanceof Inet4Address && !a.isLoopbackAddress()).toList();
            for (InetAddress address : others) {
                assertThatThrownBy(() -> {
                    try (Socket socket = new Socket()) {
                        socket.connect(new InetSocketAddress(address, server.port()), 2_000);
                    }
                }).as("connecting through %s", address).isInstanceOf(ConnectException.class);
            }
        }
    }

    @Test
    void aNonLoopbackAddressWithoutATokenIsRefusedUnlessDeclaredInsecure() {
        Settings open = Settings.of(Map.of("svc.http.host", "0.0.0.0"));
        assertThatThrownBy(() -> HttpSettings.from(open, "svc", 8080).requireTokenOffLoopback("svc"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("svc.http.host='0.0.0.0' is not a loopback address")
                .hasMessageContaining("set svc.api.token");
        assertThat(HttpSettings.from(Settings.of(Map.of("svc.http.host", "0.0.0.0", "svc.api.token", "s3cret")), "svc", 8080)
                .requireTokenOffLoopback("svc").token()).contains("s3cret");
        assertThat(HttpSettings.from(Settings.of(Map.of("svc.http.host", "0.0.0.0", "svc.api.insecure", "true")), "svc", 8080)
                .requireTokenOffLoopback("svc").insecure()).isTrue();
        assertThat(HttpSettings.from(Settings.of(Map.of("svc.http.host", "localhost")), "svc", 8080).requireTokenOffLoopback("svc").host())
                .isEqualTo("localhost");
        assertThat(HttpSettings.from(Settings.of(Map.of("svc.http.host", "0.0.0.0", "svc.http.port", "-1")), "svc", 8080)
                .requireTokenOffLoopback("svc").port()).as("no HTTP at all: nothing to protect").isEqualTo(-1);
    }

    @Test
    void secretsNeverAppearInTheSettingsText() {
        HttpSettings settings = new HttpSettings("0.0.0.0", 443, Optional.of(new HttpSettings.Tls(Path.of("/k.p12"), "keystore-pass", "PKCS12")),
                Optional.of("api-token-value"), false, List.of());
        assertThat(settings.toString()).doesNotContain("keystore-pass").doesNotContain("api-token-value").contains("token=(set)");
    }

    @Test
    void servesHttpsFromAConfiguredKeystoreAndNoPlainHttp() throws Exception {
        Path keystore = SelfSignedKeystore.create(dir.resolve("server.p12"), "changeit");
        Settings configured = Settings.of(Map.of("svc.http.port", "0", "svc.http.tls.keystore", keystore.toString(),
                "svc.http.tls.keystore.password", "changeit"));
        HttpSettings settings = HttpSettings.from(configured, "svc", 0);
        try (OpsServer server = OpsServer.start(settings, registry, () -> new Health(true, Map.of()), config -> { })) {
            assertThat(server.url()).startsWith("https://127.0.0.1:");
            HttpClient trusting = HttpClient.newBuilder().sslContext(SelfSignedKeystore.trusting(keystore, "changeit")).build();

            HttpResponse<String> health = trusting.send(HttpRequest.newBuilder(URI.create(server.url() + "/health")).build(),
                    HttpResponse.BodyHandlers.ofString());

            assertThat(health.statusCode()).isEqualTo(200);
            assertThat(health.body()).contains("\"status\":\"UP\"");
            // A client that does not trust the certificate is refused; plain HTTP on the port gets no answer it can use.
            assertThatThrownBy(() -> http.send(HttpRequest.newBuilder(URI.create(server.url() + "/health")).build(),
                    HttpResponse.BodyHandlers.ofString())).isInstanceOf(SSLHandshakeException.class);
            try {
                HttpResponse<String> plain = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/health")).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(plain.statusCode()).as("plain HTTP on the TLS port").isEqualTo(400);
                assertThat(plain.body()).doesNotContain("UP");
            } catch (java.io.IOException refused) {
                // the connection closed: as good as a 400
            }
        }
    }

    /**
     * Requests Jetty refuses before any route runs, sent as raw bytes (an HTTP client would tidy them): the answers
     * carry the same security headers as every other response, and no stack trace.
     */
    @Test
    void theServersOwnErrorsCarryTheSecurityHeadersToo() throws Exception {
        try (OpsServer server = OpsServer.start(HttpSettings.loopback(0), registry, () -> new Health(true, Map.of()), config -> { })) {
            String traversal = raw(server, "GET /../../etc/passwd HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
            String hugeHeader = raw(server, "GET /health HTTP/1.1\r\nHost: localhost\r\nX-Big: " + "a".repeat(64 * 1024)
                    + "\r\nConnection: close\r\n\r\n");

            assertThat(traversal).startsWith("HTTP/1.1 400");
            assertThat(hugeHeader).startsWith("HTTP/1.1 431");
            for (String response : List.of(traversal, hugeHeader)) {
                assertThat(response.toLowerCase(java.util.Locale.ROOT)).contains("x-content-type-options: nosniff", "referrer-policy: no-referrer",
                        "x-frame-options: deny", "cache-control: no-store").doesNotContain("at org.eclipse");
            }
        }
    }

    /** Sends the bytes and returns everything the server answered before closing. */
    private static String raw(OpsServer server, String request) throws Exception {
        try (Socket socket = new Socket("127.0.0.1", server.port())) {
            socket.setSoTimeout(10_000);
            socket.getOutputStream().write(request.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
            socket.getOutputStream().flush();
            return new String(socket.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.ISO_8859_1);
        }
    }

    @Test
    void aMissingKeystoreIsAConfigurationErrorNamingIt() {
        assertThatThrownBy(() -> HttpSettings.from(Settings.of(Map.of("svc.http.tls.keystore", dir.resolve("nope.p12").toString())), "svc", 0))
                .isInstanceOf(ConfigException.class).hasMessageContaining("svc.http.tls.keystore").hasMessageContaining("is not a readable file");
    }

    private HttpResponse<String> get(OpsServer server, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path)).build(),
                HttpResponse.BodyHandlers.ofString());
    }
}
