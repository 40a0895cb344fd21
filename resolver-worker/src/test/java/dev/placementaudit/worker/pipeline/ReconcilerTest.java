package dev.placementaudit.worker.pipeline;

import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.SampleEvents;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The reconciler on a real broker: loads the worker's group has committed past with no output (what a transaction that
 * Kafka committed on the offsets and not on the outputs leaves) are resolved again, each once, and counted.
 */
@ExtendWith(KafkaBrokerExtension.class)
class ReconcilerTest {

    @Test
    void loadsTheGroupCommittedPastWithNoSummaryAreResolvedAgainOnceEach(KafkaBroker broker) throws Exception {
        WorkerHarness h = new WorkerHarness(broker, 1);
        List<ModelLoaded> loads = IntStream.range(0, 6).mapToObj(i -> SampleEvents.edgeLoad("d" + i, "r1", 3)).toList();
        h.send(loads);
        // The group's offset after the fourth load, and no output for any of the four: as if their transaction had committed
        // its offsets and lost its outputs.
        try (Admin admin = Admin.create(broker.clientConfig())) {
            admin.alterConsumerGroupOffsets(h.group, Map.of(new TopicPartition(h.input, 0), new OffsetAndMetadata(4)))
                    .all().get(30, TimeUnit.SECONDS);
        }
        Map<String, String> settings = h.settings("reconciling");
        settings.put("worker.reconcile.after", "2s");
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);

        try (ResolverWorker worker = h.start(settings, registry)) {
            List<LoadResolved> summaries = h.resolved(6);
            assertThat(summaries).extracting(LoadResolved::getLoadId).containsExactlyInAnyOrderElementsOf(loads.stream().map(ModelLoaded::getLoadId).toList());
            await().atMost(Duration.ofSeconds(30)).until(() -> registry.get("pa.worker.reconciled").counter().count() == 4);
            // Nothing more is resolved again once each has its summary: later looks find every load settled.
            await().during(Duration.ofSeconds(5)).atMost(Duration.ofSeconds(10)).until(() -> registry.get("pa.worker.reconciled").counter().count() == 4);
            assertThat(h.resolved(6)).hasSize(6);
            assertThat(registry.get("pa.worker.reconcile.overdue").gauge().value()).isZero();
            assertThat(worker.health().up()).isTrue();
        }
    }

    @Test
    void loadsResolvedByTheLoopAreNeverResolvedAgain(KafkaBroker broker) throws Exception {
        WorkerHarness h = new WorkerHarness(broker, 3);
        List<ModelLoaded> loads = IntStream.range(0, 9).mapToObj(i -> SampleEvents.edgeLoad("d" + i, "r1", 2)).toList();
        h.send(loads);
        Map<String, String> settings = h.settings("complete");
        settings.put("worker.reconcile.after", "1s");
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);

        try (ResolverWorker worker = h.start(settings, registry)) {
            assertThat(h.resolved(9)).extracting(LoadResolved::getLoadId).doesNotHaveDuplicates().hasSize(9);
            await().during(Duration.ofSeconds(5)).atMost(Duration.ofSeconds(10)).until(() -> registry.get("pa.worker.reconciled").counter().count() == 0);
            assertThat(h.resolved(9)).extracting(LoadResolved::getLoadId).map(UUID.class::cast).doesNotHaveDuplicates();
        }
    }
}
