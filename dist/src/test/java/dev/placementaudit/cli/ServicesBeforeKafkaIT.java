package dev.placementaudit.cli;

import dev.placementaudit.testkit.BrokerProcess;
import dev.placementaudit.testkit.EmbeddedKafkaBroker;
import dev.placementaudit.testkit.PostgresServer;
import dev.placementaudit.testkit.TestDatabase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The services started before their broker, as an orchestrator restarting a whole cluster does: {@code worker run},
 * {@code store run} and {@code collector run} stay up with {@code /health} DOWN naming why, and start their work by
 * themselves once the broker comes; one that is stopped while it waits exits cleanly.
 */
class ServicesBeforeKafkaIT {
    @TempDir
    Path work;

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    @Test
    void servicesStartedWhileNoBrokerAnswersWaitForItAndStartWhenItComes() throws Exception {
        try (BrokerProcess broker = BrokerProcess.unstarted(); TestDatabase db = PostgresServer.fromEnvironment().createIsolatedSchema()) {
            Map<String, String> env = new HashMap<>(Map.of("KAFKA_BOOTSTRAP_SERVERS", broker.bootstrapServers(), "PA_CONNECT_TIMEOUT", "2s",
                    "PA_STORE_JDBC_URL", db.jdbcUrl(), "PA_STORE_JDBC_USER", db.user(), "PA_WORKER_INSTANCE_ID", "waiting-worker",
                    "JAVA_OPTS", "-Xmx256m -XX:TieredStopAtLevel=1", "PA_COLLECTOR_FLEETS", "devices",
                    "PA_COLLECTOR_FLEET_DEVICES_TOKEN_SHA256", "ab".repeat(32), "PA_COLLECTOR_FLEET_DEVICES_DEPLOYMENTS", "phone-*"));
            if (db.password() != null) {
                env.put("PA_STORE_JDBC_PASSWORD", db.password());
            }
            Map<String, Integer> ports = Map.of("worker", EmbeddedKafkaBroker.freePort(), "store", EmbeddedKafkaBroker.freePort(), "collector",
                    EmbeddedKafkaBroker.freePort());
            env.putAll(Map.of("PA_WORKER_HTTP_PORT", ports.get("worker").toString(), "PA_STORE_HTTP_PORT", ports.get("store").toString(),
                    "PA_COLLECTOR_HTTP_PORT", ports.get("collector").toString()));
            Launcher launcher = Launcher.of(Launcher.packagedHome(), work).withEnv(env);
            List<Process> services = new ArrayList<>();
            try {
                for (String service : List.of("worker", "store", "collector")) {
                    services.add(launcher.spawn(work.resolve(service + ".log"), service, "run"));
                }
                for (String service : ports.keySet()) {
                    await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(health(ports.get(service)))
                            .as(service + " while no broker answers: " + log(service)).startsWith("503 ").contains("\"waitingFor\":\"Kafka\"")
                            .contains("no Kafka broker at " + broker.bootstrapServers()));
                }
                assertThat(services).as("every service still up").allMatch(Process::isAlive);

                broker.start();

                for (String service : ports.keySet()) {
                    await().atMost(Duration.ofSeconds(90)).untilAsserted(() -> assertThat(health(ports.get(service)))
                            .as(service + " once the broker answers: " + log(service)).startsWith("200 "));
                }
                assertThat(log("worker")).contains("consuming model-loads");
                assertThat(log("store")).contains("audit-store ingesting");
            } finally {
                services.forEach(Process::destroy);
            }
            for (Process service : services) {
                assertThat(service.waitFor(30, TimeUnit.SECONDS)).isTrue();
            }
        }
    }

    @Test
    void aServiceStoppedWhileItWaitsForKafkaExitsAtOnce() throws Exception {
        try (BrokerProcess broker = BrokerProcess.unstarted()) {
            int port = EmbeddedKafkaBroker.freePort();
            Launcher launcher = Launcher.of(Launcher.packagedHome(), work).withEnv(Map.of("KAFKA_BOOTSTRAP_SERVERS", broker.bootstrapServers(),
                    "PA_CONNECT_TIMEOUT", "1s", "PA_WORKER_HTTP_PORT", Integer.toString(port), "JAVA_OPTS", "-Xmx256m"));
            Process worker = launcher.spawn(work.resolve("worker.log"), "worker", "run");
            await().atMost(Duration.ofSeconds(60)).until(() -> health(port).startsWith("503 "));

            worker.destroy();

            assertThat(worker.waitFor(10, TimeUnit.SECONDS)).as(log("worker")).isTrue();
            assertThat(log("worker")).contains("staying up and asking again").doesNotContain("Exception");
        }
    }

    /** The status and body of {@code /health}, or "-1" when nothing answers. */
    private String health(int port) {
        try {
            HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health"))
                    .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
            return response.statusCode() + " " + response.body();
        } catch (IOException | InterruptedException e) {
            return "-1";
        }
    }

    private String log(String service) {
        try {
            return Files.readString(work.resolve(service + ".log"));
        } catch (IOException e) {
            return "";
        }
    }
}
