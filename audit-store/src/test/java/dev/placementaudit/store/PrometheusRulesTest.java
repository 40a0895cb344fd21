package dev.placementaudit.store;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.schemas.EventSerde;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import dev.placementaudit.service.Settings;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.SampleEvents;
import dev.placementaudit.testkit.TestDatabase;
import dev.placementaudit.testkit.DatabaseTargets;
import dev.placementaudit.worker.WorkerConfig;
import dev.placementaudit.worker.pipeline.ResolverWorker;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** The shipped alert rules parse, and every metric they query is one the worker or the store really exports. */
@ExtendWith(KafkaBrokerExtension.class)
class PrometheusRulesTest {
    private static final Pattern METRIC = Pattern.compile("\\b(pa_[a-z_]+)\\b");

    @Test
    void everyRuleQueriesAnExportedMetric(KafkaBroker broker) throws Exception {
        JsonNode rules = new ObjectMapper(new YAMLFactory()).readTree(Path.of("..", "deploy", "prometheus", "placement-audit.rules.yml").toFile());
        Set<String> referenced = new HashSet<>();
        for (JsonNode rule : rules.get("groups").get(0).get("rules")) {
            assertThat(rule.get("alert").asText()).startsWith("Placement");
            Matcher m = METRIC.matcher(rule.get("expr").asText());
            while (m.find()) {
                referenced.add(m.group(1));
            }
        }

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
                await().atMost(Duration.ofSeconds(60)).until(() -> registry.scrape().contains("pa_store_alerts_total{kind=\"LOST_MAPPING\""));
            }
        }
        String exported = registry.scrape();
        assertThat(referenced).isNotEmpty().allSatisfy(metric -> assertThat(exported).as(metric).contains(metric));
    }
}
