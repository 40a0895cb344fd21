package dev.placementaudit.store;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.service.Settings;
import dev.placementaudit.testkit.DatabaseTargets;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.RequiredTool;
import dev.placementaudit.testkit.SampleEvents;
import dev.placementaudit.testkit.TestDatabase;
import dev.placementaudit.worker.WorkerConfig;
import dev.placementaudit.worker.pipeline.ResolverWorker;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The shipped alert rules and Grafana dashboard: the rules pass promtool's check and their unit tests, and every
 * metric the rules and the dashboard's panels query is one the worker or the store really exports.
 */
@ExtendWith(KafkaBrokerExtension.class)
class PrometheusRulesTest {
    private static final Pattern METRIC = Pattern.compile("\\b(pa_[a-z_]+)\\b");
    private static final Path PROMETHEUS = Path.of("..", "deploy", "prometheus");
    private static final Path GRAFANA = Path.of("..", "deploy", "grafana", "placement-audit.json");

    @Test
    void theRulesPassPromtoolsCheckAndTheirUnitTests() throws Exception {
        Path promtool = RequiredTool.find("prometheus", "promtool");

        Run check = run(promtool.toString(), "check", "rules", "placement-audit.rules.yml");
        Run test = run(promtool.toString(), "test", "rules", "placement-audit.rules.test.yml");

        assertThat(check.exit()).as(check.output()).isZero();
        assertThat(check.output()).contains("SUCCESS");
        assertThat(test.exit()).as(test.output()).isZero();
        assertThat(test.output()).contains("SUCCESS");
    }

    @Test
    void everyRuleAndEveryDashboardPanelQueriesAnExportedMetric(KafkaBroker broker) throws Exception {
        Set<String> referenced = new TreeSet<>();
        JsonNode rules = new ObjectMapper(new YAMLFactory()).readTree(PROMETHEUS.resolve("placement-audit.rules.yml").toFile());
        for (JsonNode rule : rules.get("groups").get(0).get("rules")) {
            assertThat(rule.get("alert").asText()).startsWith("Placement");
            metrics(rule.get("expr").asText(), referenced);
        }
        JsonNode dashboard = new ObjectMapper().readTree(GRAFANA.toFile());
        int queries = 0;
        for (JsonNode panel : dashboard.get("panels")) {
            for (JsonNode target : panel.get("targets")) {
                Set<String> inQuery = new TreeSet<>();
                metrics(target.get("expr").asText(), inQuery);
                assertThat(inQuery).as("panel '%s' queries a placement-audit metric", panel.get("title").asText()).isNotEmpty();
                referenced.addAll(inQuery);
                queries++;
            }
        }
        for (JsonNode variable : dashboard.get("templating").get("list")) {
            if (variable.get("type").asText().equals("query")) {
                metrics(variable.get("query").asText(), referenced);
            }
        }
        assertThat(queries).isGreaterThanOrEqualTo(9);

        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        String input = KafkaBroker.uniqueTopic("rules-loads");
        broker.createTopics(1, input);
        try (TestDatabase db = DatabaseTargets.open(TestDatabase.Kind.H2)) {
            StoreHarness h = new StoreHarness(broker, db);
            Map<String, String> worker = new HashMap<>(Map.of("kafka.bootstrap.servers", broker.bootstrapServers(),
                    "worker.input.topic", input, "worker.decisions.topic", h.decisions, "worker.resolved.topic", h.resolved,
                    "worker.group.id", "rules-" + input, "worker.instance.id", "rules", "worker.http.port", "-1"));
            try (ResolverWorker w = ResolverWorker.start(WorkerConfig.from(Settings.of(worker)), registry);
                 AuditStore store = h.start(h.settings(), registry)) {
                ModelLoaded r1 = StoreHarness.load("d", "r1", 2, 0, false);
                ModelLoaded r2 = StoreHarness.load("d", "r2", 2, 1, true);
                try (KafkaProducer<String, ModelLoaded> producer = new KafkaProducer<>(broker.clientConfig(), new StringSerializer(),
                        EventSerde.of(ModelLoaded.class))) {
                    for (ModelLoaded load : List.of(r1, r2, SampleEvents.load("d", "bad", List.of()))) {
                        producer.send(new ProducerRecord<>(input, "d", load)).get(10, TimeUnit.SECONDS);
                    }
                }
                // And a record only the store can refuse, so that its dead-letter counter exists too.
                h.publishRaw(h.decisions, "not an event".getBytes(StandardCharsets.UTF_8));
                await().atMost(Duration.ofSeconds(60)).until(() -> registry.scrape().contains("pa_store_alerts_total{kind=\"LOST_MAPPING\"")
                        && registry.scrape().contains("pa_store_dlq_total"));
            }
        }
        String exported = registry.scrape();
        assertThat(referenced).isNotEmpty().allSatisfy(metric -> assertThat(exported).as(metric).contains(metric));
        assertThat(exported).contains("pa_store_alert_delta_bytes{deployment=\"d\",from_release=\"r1\",kind=\"OFFHEAP_GROWTH\",model=\"sample-model\","
                + "to_release=\"r2\"}");
        for (String phase : List.of("rows", "lock", "complete", "chain", "detect", "runtime", "commit")) {
            assertThat(exported).as("the batches' time in phase %s", phase).contains("pa_store_batch_phase_seconds_count{phase=\"" + phase + "\"}");
        }
        for (String phase : List.of("resolving", "sending", "polling", "committing")) {
            assertThat(exported).as("the worker's batches' time in phase %s", phase).contains("pa_worker_batch_phase_seconds_sum{phase=\"" + phase + "\"}");
        }
    }

    private static void metrics(String expr, Set<String> into) {
        Matcher m = METRIC.matcher(expr);
        while (m.find()) {
            into.add(m.group(1));
        }
    }

    private record Run(int exit, String output) {
    }

    private static Run run(String... command) throws Exception {
        Process process = new ProcessBuilder(command).directory(PROMETHEUS.toFile()).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        return new Run(process.exitValue(), output);
    }
}
