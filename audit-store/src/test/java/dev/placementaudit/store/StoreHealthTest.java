package dev.placementaudit.store;

import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.service.Health;
import dev.placementaudit.service.Settings;
import dev.placementaudit.testkit.EmbeddedKafkaBroker;
import dev.placementaudit.testkit.H2FileDatabase;
import dev.placementaudit.testkit.TestDatabase;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** /health tells the truth: a store cut off from its broker, or given no partition, says so once that has lasted past the bound. */
class StoreHealthTest {
    private static List<?> problems(Health health) {
        return (List<?>) health.details().getOrDefault("problems", List.of());
    }

    @Test
    void aStoreWhoseBrokerIsGoneIsDownAndComesBackUpWithIt() throws Exception {
        try (EmbeddedKafkaBroker broker = EmbeddedKafkaBroker.startEphemeral(); TestDatabase db = H2FileDatabase.create()) {
            StoreHarness h = new StoreHarness(broker, db);
            Map<String, String> settings = h.settings();
            settings.put("store.health.bound", "3s");
            try (AuditStore store = h.start(settings)) {
                await().atMost(Duration.ofSeconds(30)).until(() -> store.health().up());

                broker.stop();
                await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                    Health health = store.health();
                    assertThat(health.up()).isFalse();
                    assertThat(problems(health)).anySatisfy(p -> assertThat(p.toString()).contains("no connection to any Kafka broker").contains("the cluster is unreachable"));
                });

                broker.restart();
                await().atMost(Duration.ofSeconds(90)).until(() -> store.health().up());
            }
        }
    }

    @Test
    void aStoreWithNoPartitionIsDownSayingSo() throws Exception {
        try (EmbeddedKafkaBroker broker = EmbeddedKafkaBroker.startEphemeral(); TestDatabase db = H2FileDatabase.create()) {
            String base = dev.placementaudit.testkit.KafkaBroker.uniqueTopic("one-partition");
            broker.createTopics(1, base + ".decided", base + ".resolved", base + ".alerts", base + ".decided.dlq");
            Map<String, String> settings = new java.util.HashMap<>(Map.of("kafka.bootstrap.servers", broker.bootstrapServers(),
                    "store.decisions.topic", base + ".decided", "store.resolved.topic", base + ".resolved", "store.alerts.topic", base + ".alerts",
                    "store.group.id", base, "store.jdbc.url", db.jdbcUrl(), "store.http.port", "-1", "store.poll.timeout", "200ms",
                    "store.health.bound", "3s", "store.topics.create", "false"));
            settings.put("store.jdbc.user", db.user());
            Map<String, String> second = new java.util.HashMap<>(settings);
            settings.put("store.instance.id", base + "-1");
            second.put("store.instance.id", base + "-2");
            // Two partitions in all, and a range assignor: both go to one member, the other has nothing to do.
            try (AuditStore a = AuditStore.start(StoreConfig.from(Settings.of(settings)), new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
                 AuditStore b = AuditStore.start(StoreConfig.from(Settings.of(second)), new PrometheusMeterRegistry(PrometheusConfig.DEFAULT))) {
                await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                    AuditStore idle = a.health().details().get("assignedPartitions").toString().equals("[]") ? a : b;
                    Health health = idle.health();
                    assertThat(health.up()).isFalse();
                    assertThat(problems(health)).anySatisfy(p -> assertThat(p.toString()).startsWith("no partitions assigned for"));
                    assertThat((idle == a ? b : a).health().up()).isTrue();
                });
            }
        }
    }
}
