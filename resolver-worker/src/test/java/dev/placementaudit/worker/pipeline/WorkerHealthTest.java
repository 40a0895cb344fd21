package dev.placementaudit.worker.pipeline;

import dev.placementaudit.service.Health;
import dev.placementaudit.testkit.EmbeddedKafkaBroker;
import dev.placementaudit.testkit.SampleEvents;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** The worker's /health says DOWN, and why, once its broker has been gone past the bound; and UP again when it is back. */
class WorkerHealthTest {
    @Test
    void aWorkerWhoseBrokerIsGoneIsDownAndComesBackUpWithIt() throws Exception {
        try (EmbeddedKafkaBroker broker = EmbeddedKafkaBroker.startEphemeral()) {
            WorkerHarness h = new WorkerHarness(broker, 1);
            Map<String, String> settings = h.settings("w-health");
            settings.put("worker.health.bound", "3s");
            try (ResolverWorker worker = h.start(settings)) {
                h.send(List.of(SampleEvents.edgeLoad("d", "r1", 1)));
                h.resolved(1);
                await().atMost(Duration.ofSeconds(30)).until(() -> worker.health().up());

                broker.stop();
                await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                    Health health = worker.health();
                    assertThat(health.up()).isFalse();
                    assertThat((List<?>) health.details().get("problems")).anySatisfy(p -> assertThat(p.toString())
                            .contains("no connection to any Kafka broker"));
                });

                broker.restart();
                await().atMost(Duration.ofSeconds(90)).until(() -> worker.health().up());
            }
        }
    }
}
