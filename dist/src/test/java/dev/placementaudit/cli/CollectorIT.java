package dev.placementaudit.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.placementaudit.testkit.EmbeddedKafkaBroker;
import dev.placementaudit.testkit.SelfSignedKeystore;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A device's path as an operator sets it up from the distribution: {@code collector token} for two fleets, {@code collector
 * run} over TLS with a keystore made here, {@code worker run} and {@code store run}; then a phone's runtime reports a real
 * load with {@code producer load --collector ... --token-file ...}, and the store has it, complete and observed. The
 * browsers' token cannot write a phone's deployment; 401, 403 and 429 from the running collector (413 and the rest: CollectorTest); a phone reporting while the broker is
 * down spools, and its next report delivers everything, once.
 */
class CollectorIT {
    private static final Pattern TOKEN = Pattern.compile("token \\(shown once[^:]*: (\\S+)");
    private static final Pattern DIGEST = Pattern.compile("collector\\.fleet\\.(\\S+)\\.token\\.sha256=(\\S+)");
    private static final Pattern URL = Pattern.compile("at (https://127\\.0\\.0\\.1:\\d+)");
    static EmbeddedKafkaBroker broker;

    @TempDir
    Path work;

    @BeforeAll
    static void startABroker() {
        broker = EmbeddedKafkaBroker.startEphemeral();
    }

    @AfterAll
    static void stopTheBroker() {
        broker.close();
    }

    @Test
    void aPhoneReportsALoadThroughTheCollectorOverTlsIntoTheStore() throws Exception {
        Launcher launcher = Launcher.of(Launcher.packagedHome(), work);
        Launcher.Run phones = launcher.run(Duration.ofSeconds(30), "collector", "token", "--fleet", "phones", "--deployments", "android-*");
        Launcher.Run browsers = launcher.run(Duration.ofSeconds(30), "collector", "token", "--fleet", "browsers", "--deployments", "web-*");
        assertThat(phones.exit()).as(phones.toString()).isZero();
        assertThat(phones.out()).contains("collector.fleet.phones.deployments=android-*");
        Files.writeString(work.resolve("phones.token"), group(TOKEN, phones.out(), 1) + "\n");
        Files.writeString(work.resolve("browsers.token"), group(TOKEN, browsers.out(), 1));

        Path keystore = SelfSignedKeystore.create(work.resolve("collector.p12"), "changeit");
        Files.writeString(work.resolve("collector.properties"), String.join("\n",
                "collector.fleets=phones,browsers",
                digestLine(phones.out()), "collector.fleet.phones.deployments=android-*",
                digestLine(browsers.out()), "collector.fleet.browsers.deployments=web-*",
                "collector.fleet.browsers.rate.per.second=1", "collector.fleet.browsers.rate.burst=1",
                "collector.send.timeout=3s", "collector.retry.after=2s", "collector.http.port=0", "collector.http.tls.keystore=" + keystore, "collector.http.tls.keystore.password=changeit", ""));
        Launcher services = launcher.withEnv(Map.of("KAFKA_BOOTSTRAP_SERVERS", broker.bootstrapServers(), "PA_WORKER_HTTP_PORT", "0",
                "PA_STORE_HTTP_PORT", "0", "PA_WORKER_INSTANCE_ID", "it-worker", "JAVA_OPTS", "-Xmx512m"));
        Process collector = services.spawn(work.resolve("collector.log"), "collector", "run", "--config", "collector.properties");
        Process worker = services.spawn(work.resolve("worker.log"), "worker", "run");
        Process store = services.spawn(work.resolve("store.log"), "store", "run");
        try {
            await().atMost(Duration.ofSeconds(60)).until(() -> log("worker.log").contains("consuming model-loads")
                    && log("store.log").contains("audit-store ingesting") && URL.matcher(log("collector.log")).find());
            String url = group(URL, log("collector.log"), 1);

            Launcher.Run sample = launcher.run(Duration.ofSeconds(30), "producer", "sample-model", "--layout", "llama-3.2-1b-q4km", "--out",
                    "llama-1b.gguf");
            assertThat(sample.exit()).as(sample.toString()).isZero();
            // The phone's runtime trusts the collector's certificate (here: the keystore made above) as a JVM does.
            Launcher phone = services.withEnv(Map.of("JAVA_OPTS", "-Xmx512m -Djavax.net.ssl.trustStore=" + keystore
                    + " -Djavax.net.ssl.trustStorePassword=changeit -Djavax.net.ssl.trustStoreType=PKCS12"));
            Launcher.Run load = phone.run(Duration.ofSeconds(60), "producer", "load", "--model", "llama-1b.gguf", "--profile", "mobile-2gb",
                    "--platform", "android", "--deployment", "android-7", "--release", "r1", "--collector", url, "--token-file", "phones.token");
            assertThat(load.exit()).as(load.toString()).isZero();
            assertThat(load.out()).containsPattern("published load \\S+ with the loader's decisions and its observation through the collector at "
                    + Pattern.quote(url) + " \\(2 accepted\\)");
            String loadId = group(Pattern.compile("published load (\\S+)"), load.out(), 1);

            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
                Launcher.Run where = launcher.run(Duration.ofSeconds(30), "store", "where", "--load", loadId, "--format", "json");
                assertThat(where.exit()).as(where.toString()).isZero();
                JsonNode detail = new ObjectMapper().readTree(where.out());
                assertThat(detail.toString()).contains("\"complete\":true");
                assertThat(detail.path("observed").isMissingNode() || detail.path("observed").isNull()).as(where.out()).isFalse();
            });

            // The browsers' token cannot write a phone: refused whole, in one line, without a stack trace.
            Launcher.Run forbidden = phone.run(Duration.ofSeconds(60), "producer", "load", "--model", "llama-1b.gguf", "--profile", "mobile-2gb",
                    "--platform", "android", "--deployment", "android-8", "--release", "r1", "--collector", url, "--token-file", "browsers.token");
            assertThat(forbidden.exit()).as(forbidden.toString()).isEqualTo(2);
            assertThat(forbidden.err()).contains("refused the batch (403): fleet browsers may not write deployment 'android-8'")
                    .doesNotContain("\tat ");
            // No token at all: a 401 a browser's fetch would see, straight from the HTTP API.
            HttpClient trusting = HttpClient.newBuilder().sslContext(SelfSignedKeystore.trusting(keystore, "changeit")).build();
            HttpResponse<String> anonymous = trusting.send(HttpRequest.newBuilder(URI.create(url + "/v1/loads"))
                    .POST(HttpRequest.BodyPublishers.ofString("{\"loads\": []}")).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(anonymous.statusCode()).isEqualTo(401);
            // The browsers may send one request a second: of a few sent back to back, one is a 429 saying how long to wait.
            HttpResponse<String> limited = null;
            for (int i = 0; i < 5 && (limited == null || limited.statusCode() != 429); i++) {
                limited = post(trusting, url, Files.readString(work.resolve("browsers.token")), new byte[]{'{', '}'});
            }
            assertThat(limited.statusCode()).as(limited.body()).isEqualTo(429);
            assertThat(limited.headers().firstValue("Retry-After")).isPresent();

            // The broker stops while a phone keeps reporting: the collector answers 503 with Retry-After, the phone keeps the
            // batch in its spool (exit 0, it says so), and once the broker is back its next report delivers the spool first.
            broker.stop();
            Launcher.Run offline = phone.run(Duration.ofSeconds(90), "producer", "load", "--model", "llama-1b.gguf", "--profile", "mobile-2gb",
                    "--platform", "android", "--deployment", "android-9", "--release", "r1", "--collector", url, "--token-file", "phones.token",
                    "--spool", "spool");
            assertThat(offline.exit()).as(offline.toString()).isZero();
            assertThat(offline.out()).contains("is unreachable", "kept in spool, delivered first by the next run");
            assertThat(log("collector.log")).contains("the broker did not acknowledge a batch");
            broker.restart();
            // Each report is a load of its own: one while the broker was down, then as many as it takes to find it back
            // (a report made while the collector still answers 503 is spooled behind the first).
            AtomicInteger reports = new AtomicInteger(1);
            await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofSeconds(2)).untilAsserted(() -> {
                Launcher.Run back = phone.run(Duration.ofSeconds(90), "producer", "load", "--model", "llama-1b.gguf", "--profile", "mobile-2gb",
                        "--platform", "android", "--deployment", "android-9", "--release", "r2", "--collector", url, "--token-file", "phones.token",
                        "--spool", "spool");
                reports.incrementAndGet();
                assertThat(back.exit()).as(back.toString()).isZero();
                assertThat(back.out()).containsPattern("published load .* and \\d+ spooled batches before them");
            });
            assertThat(Files.list(work.resolve("spool")).filter(f -> f.toString().endsWith(".gz"))).as("the spool delivered").isEmpty();
            await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
                Launcher.Run where = launcher.run(Duration.ofSeconds(30), "store", "where", "--deployment", "android-9", "--format", "json", "--limit", "100");
                assertThat(where.exit()).as(where.toString()).isZero();
                assertThat(where.out().split("\"complete\" : true", -1)).as("every report, once: " + where.out()).hasSize(reports.get() + 1);
            });
        } finally {
            collector.destroy();
            worker.destroy();
            store.destroy();
        }
        assertThat(collector.waitFor(30, TimeUnit.SECONDS)).as(log("collector.log")).isTrue();
        assertThat(collector.exitValue()).as(log("collector.log")).isIn(0, 143);
        assertThat(worker.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(store.waitFor(30, TimeUnit.SECONDS)).isTrue();
    }

    private static HttpResponse<String> post(HttpClient client, String url, String token, byte[] body) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create(url + "/v1/loads")).header("Authorization", "Bearer " + token.trim())
                .POST(HttpRequest.BodyPublishers.ofByteArray(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private static String digestLine(String tokenOutput) {
        Matcher m = DIGEST.matcher(tokenOutput);
        assertThat(m.find()).as(tokenOutput).isTrue();
        return m.group(0);
    }

    private static String group(Pattern pattern, String text, int group) {
        Matcher m = pattern.matcher(text);
        assertThat(m.find()).as(pattern + " in " + text).isTrue();
        return m.group(group);
    }

    private String log(String name) {
        try {
            return Files.readString(work.resolve(name));
        } catch (java.io.IOException e) {
            return "(no " + name + ": " + e + ")";
        }
    }
}
