package dev.placementaudit.store;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.testkit.DatabaseTargets;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.RequiredTool;
import dev.placementaudit.testkit.TestDatabase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The shipped rules with a real Prometheus and a real Alertmanager (Debian's packages, on loopback): Prometheus
 * scrapes a running store, evaluates deploy/prometheus/placement-audit.rules.yml, and a regression the store found on
 * 120 deployments arrives in Alertmanager as one alert (one cause, one incident) with its model, releases and kind, and
 * a link that opens the incident on the store's dashboard.
 */
@ExtendWith(KafkaBrokerExtension.class)
class AlertmanagerEndToEndTest {
    private static final int DEPLOYMENTS = 120;
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient http = HttpClient.newHttpClient();
    private final List<Process> processes = new ArrayList<>();

    @TempDir
    Path dir;

    @Test
    void aRegressionOnMoreThanAHundredDeploymentsArrivesInAlertmanagerAsOneAlertThatOpensItsIncident(KafkaBroker broker) throws Exception {
        Path prometheus = RequiredTool.find("prometheus", "prometheus");
        Path alertmanager = RequiredTool.find("prometheus-alertmanager", "prometheus-alertmanager", "alertmanager");
        try (TestDatabase db = DatabaseTargets.open(TestDatabase.Kind.H2)) {
            StoreHarness h = new StoreHarness(broker, db);
            // One change in r2 on 120 deployments: one cause, one incident, one alert in Alertmanager.
            List<ModelLoaded> loads = new ArrayList<>();
            for (int d = 0; d < DEPLOYMENTS; d++) {
                loads.add(StoreHarness.load("phone-" + d, "r1", 3, 0, false));
            }
            for (int d = 0; d < DEPLOYMENTS; d++) {
                loads.add(StoreHarness.load("phone-" + d, "r2", 3, 24, true));
            }
            h.publish(loads);
            Map<String, String> settings = h.settings();
            settings.put("store.http.port", "0");
            try (AuditStore store = h.start(settings)) {
                await().atMost(Duration.ofSeconds(90)).until(() -> h.count("SELECT COUNT(*) FROM incident_deployments WHERE showing") == DEPLOYMENTS);
                String target = "127.0.0.1:" + store.port();
                int amPort = freePort();
                int promPort = freePort();
                Files.writeString(dir.resolve("alertmanager.yml"), """
                        route:
                          receiver: keep
                          group_wait: 1s
                          group_interval: 1s
                        receivers:
                          - name: keep
                        """);
                Files.writeString(dir.resolve("prometheus.yml"), """
                        global:
                          scrape_interval: 1s
                          evaluation_interval: 1s
                        rule_files:
                          - %s
                        alerting:
                          alertmanagers:
                            - static_configs:
                                - targets: ["127.0.0.1:%d"]
                        scrape_configs:
                          - job_name: placement-audit-store
                            static_configs:
                              - targets: ["%s"]
                        """.formatted(Path.of("..", "deploy", "prometheus", "placement-audit.rules.yml").toAbsolutePath().normalize(), amPort, target));
                start(dir.resolve("alertmanager.log"), alertmanager.toString(), "--config.file=" + dir.resolve("alertmanager.yml"),
                        "--storage.path=" + dir.resolve("am-data"), "--web.listen-address=127.0.0.1:" + amPort, "--cluster.listen-address=");
                start(dir.resolve("prometheus.log"), prometheus.toString(), "--config.file=" + dir.resolve("prometheus.yml"),
                        "--storage.tsdb.path=" + dir.resolve("prom-data"), "--web.listen-address=127.0.0.1:" + promPort);

                AtomicReference<JsonNode> received = new AtomicReference<>();
                List<JsonNode> all = new ArrayList<>();
                try {
                    await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofSeconds(1)).ignoreExceptions().until(() -> {
                        HttpResponse<String> alerts = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + amPort + "/api/v2/alerts"))
                                .build(), HttpResponse.BodyHandlers.ofString());
                        all.clear();
                        JSON.readTree(alerts.body()).forEach(all::add);
                        for (JsonNode alert : all) {
                            if (alert.get("labels").get("alertname").asText().equals("PlacementRegression")
                                    && alert.get("annotations").get("summary").asText().contains("on " + DEPLOYMENTS + " deployment(s)")) {
                                received.set(alert);
                                return true;
                            }
                        }
                        return false;
                    });
                } catch (org.awaitility.core.ConditionTimeoutException e) {
                    throw new AssertionError("no alert reached Alertmanager; prometheus said:\n" + tail(dir.resolve("prometheus.log"))
                            + "\nalertmanager said:\n" + tail(dir.resolve("alertmanager.log")), e);
                }

                // Give Prometheus a few more evaluations: nothing else may arrive for the same cause.
                Thread.sleep(3_000);
                HttpResponse<String> after = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + amPort + "/api/v2/alerts")).build(),
                        HttpResponse.BodyHandlers.ofString());
                List<String> names = new ArrayList<>();
                JSON.readTree(after.body()).forEach(a -> names.add(a.get("labels").get("alertname").asText()));
                assertThat(names).as("one alert for a cause on %d deployments", DEPLOYMENTS).containsExactly("PlacementRegression");

                JsonNode labels = received.get().get("labels");
                String incident = labels.get("incident").asText();
                assertThat(incident).matches("inc-[0-9a-f]{16}");
                assertThat(labels.get("model").asText()).isEqualTo("sample-model");
                assertThat(labels.get("from_release").asText()).isEqualTo("r1");
                assertThat(labels.get("to_release").asText()).isEqualTo("r2");
                assertThat(labels.get("kind").asText()).isEqualTo("LOST_MAPPING");
                assertThat(labels.get("severity").asText()).isEqualTo("warning");
                assertThat(labels.has("deployment")).as("no deployment label: cardinality follows causes").isFalse();
                JsonNode annotations = received.get().get("annotations");
                assertThat(annotations.get("summary").asText()).isEqualTo("sample-model r1 -> r2: LOST_MAPPING on " + DEPLOYMENTS
                        + " deployment(s) (" + incident + ")");
                String link = annotations.get("dashboard").asText();
                assertThat(link).isEqualTo("http://" + target + "/#incident?id=" + incident);
                // The link's page is the store's dashboard, and the incident it opens answers with every deployment.
                assertThat(http.send(HttpRequest.newBuilder(URI.create(link)).build(), HttpResponse.BodyHandlers.ofString()).body())
                        .contains("placement-audit");
                HttpResponse<String> opened = http.send(HttpRequest.newBuilder(URI.create("http://" + target + "/api/incident?id=" + incident))
                        .build(), HttpResponse.BodyHandlers.ofString());
                JsonNode detail = JSON.readTree(opened.body());
                assertThat(detail.get("incident").get("cause").asText()).contains("re-encoded at load");
                assertThat(detail.get("deployments")).hasSize(DEPLOYMENTS);
            } finally {
                for (Process p : processes) {
                    p.destroy();
                    p.waitFor(10, TimeUnit.SECONDS);
                }
            }
        }
    }

    private void start(Path log, String... command) throws Exception {
        processes.add(new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start());
    }

    private static String tail(Path log) throws Exception {
        if (!Files.exists(log)) {
            return "(no log)";
        }
        List<String> lines = Files.readAllLines(log);
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
    }

    private static int freePort() throws Exception {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }
}
