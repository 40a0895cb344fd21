package dev.placementaudit.worker.pipeline;

import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.service.Settings;
import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.testkit.SampleEvents;
import dev.placementaudit.worker.WorkerConfig;
import dev.placementaudit.worker.WorkerVersion;
import dev.placementaudit.worker.reconcile.Reconciler;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
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

    /**
     * A transaction left open on the summaries (here a stranger's, with a long timeout: what a hanging one looks like to
     * readers) holds every read_committed reader. The worker reports it with the runbook, does not abort it, and resolves
     * nothing again behind it on a guess; the operator's abort releases the summaries, each load there once.
     */
    @Test
    void aTransactionLeftOpenOnTheSummariesIsReportedNotAbortedAndNothingIsResolvedAgainBehindIt(KafkaBroker broker) throws Exception {
        WorkerHarness h = new WorkerHarness(broker, 1);
        broker.createTopics(1, h.resolved);
        Map<String, String> settings = h.settings("held");
        settings.put("worker.transaction.timeout", "5s");
        settings.put("worker.reconcile.after", "1s");
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        Map<String, Object> stranger = broker.clientConfig();
        stranger.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "stranger-" + h.input);
        stranger.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 600_000);
        try (KafkaProducer<byte[], byte[]> open = new KafkaProducer<>(stranger, new ByteArraySerializer(), new ByteArraySerializer());
             ResolverWorker worker = h.start(settings, registry)) {
            open.initTransactions();
            open.beginTransaction();
            open.send(new ProducerRecord<>(h.resolved, 0, null, "not a summary".getBytes(StandardCharsets.UTF_8))).get(10, TimeUnit.SECONDS);
            List<ModelLoaded> loads = IntStream.range(0, 5).mapToObj(i -> SampleEvents.edgeLoad("d" + i, "r1", 2)).toList();
            h.send(loads);

            // Reported once the hold has outlasted the worker's transaction timeout and 30 s.
            await().atMost(Duration.ofSeconds(90)).until(() -> worker.problems().stream().anyMatch(p -> p.contains("left hanging")));
            assertThat(worker.health().up()).isFalse();
            assertThat(worker.problems()).singleElement().asString().contains("left hanging", h.resolved + "-0", "docs/operations.md");
            assertThat(registry.get("pa.worker.hanging.partitions").gauge().value()).isEqualTo(1);
            assertThat(h.openTransactions(h.resolved)).as("the worker did not abort it").contains("from 0");
            assertThat(registry.get("pa.worker.reconciled").counter().count()).as("nothing resolved again behind the hold").isZero();

            assertThat(h.abortHanging(worker.problems())).hasSize(1);

            assertThat(h.resolved(5)).extracting(LoadResolved::getLoadId).containsExactlyInAnyOrderElementsOf(loads.stream().map(ModelLoaded::getLoadId).toList());
            await().atMost(Duration.ofSeconds(30)).until(() -> worker.health().up());
            assertThat(registry.get("pa.worker.hanging.partitions").gauge().value()).isZero();
            assertThat(registry.get("pa.worker.reconciled").counter().count()).isZero();
        }
    }

    /**
     * A transaction left open on the worker's group's own {@code __consumer_offsets} partition (seen once in CI on one
     * broker killed every few seconds): the watch finds that partition by Kafka's rule (the group id's hash), reports it
     * with the runbook, does not abort it, and the runbook's abort there clears it while the worker kept resolving.
     */
    @Test
    void aTransactionLeftOpenOnTheGroupsOffsetsPartitionIsReportedAndTheRunbooksAbortClearsIt(KafkaBroker broker) throws Exception {
        WorkerHarness h = new WorkerHarness(broker, 1);
        String elsewhere = h.input + "-elsewhere";
        broker.createTopics(1, elsewhere);
        Map<String, String> settings = h.settings("group-held");
        settings.put("worker.transaction.timeout", "5s");
        settings.put("worker.reconcile.after", "1s");
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        Map<String, Object> stranger = broker.clientConfig();
        stranger.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "stranger-offsets-" + h.input);
        stranger.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 600_000);
        try (KafkaProducer<byte[], byte[]> open = new KafkaProducer<>(stranger, new ByteArraySerializer(), new ByteArraySerializer());
             ResolverWorker worker = h.start(settings, registry)) {
            List<ModelLoaded> first = IntStream.range(0, 3).mapToObj(i -> SampleEvents.edgeLoad("a" + i, "r1", 2)).toList();
            h.send(first);
            assertThat(h.resolved(3)).hasSize(3);
            // Offsets for another topic, in the worker's group, inside a transaction that is never ended: the group's
            // partition of __consumer_offsets holds a transaction open from now on.
            open.initTransactions();
            open.beginTransaction();
            open.sendOffsetsToTransaction(Map.of(new TopicPartition(elsewhere, 0), new OffsetAndMetadata(0)),
                    new org.apache.kafka.clients.consumer.ConsumerGroupMetadata(h.group));
            open.flush();
            boolean aborted = false;
            try {
                aborted = heldAndReleased(broker, h, worker, registry);
            } finally {
                if (!aborted) {
                    // The partition is shared with every other group on this broker: never leave it held for the next test.
                    open.abortTransaction();
                }
            }
            List<ModelLoaded> then = IntStream.range(0, 3).mapToObj(i -> SampleEvents.edgeLoad("b" + i, "r1", 2)).toList();
            h.send(then);
            assertThat(h.resolved(6)).extracting(LoadResolved::getLoadId).map(UUID.class::cast).doesNotHaveDuplicates().hasSize(6);
            assertThat(registry.get("pa.worker.reconciled").counter().count()).isZero();
        }
    }

    /**
     * Topics grown while the worker runs ({@code kafka-topics.sh --alter --partitions}): a load on a partition of the
     * input added since the reconciler started, committed past with no output, is resolved again without a restart; its
     * new summary, on a partition of the summaries added since too, is read, so it is resolved again once, not at every
     * look. The reconciler runs here on its own, as the worker builds it, for a group no loop holds (so its offsets can be
     * set as a lost transaction leaves them).
     */
    @Test
    void partitionsAddedWhileItRunsAreReconciledWithoutARestart(KafkaBroker broker) throws Exception {
        WorkerHarness h = new WorkerHarness(broker, 1);
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        // The reconciler's producer learns of the summaries' new partition within half a second, not the default five minutes.
        try (Admin admin = Admin.create(broker.clientConfig());
             Alone alone = Alone.start(h, "grown", Map.of("kafka.metadata.max.age.ms", "500"), () -> Set.of(0, 1), admin, registry)) {
            Thread thread = alone.thread();
            h.send(IntStream.range(0, 2).mapToObj(i -> SampleEvents.edgeLoad("d" + i, "r1", 2)).toList());
            commit(admin, h, 0, 2);
            await().atMost(Duration.ofSeconds(30)).until(() -> registry.get("pa.worker.reconciled").counter().count() == 2);

            admin.createPartitions(Map.of(h.input, NewPartitions.increaseTo(2), h.resolved, NewPartitions.increaseTo(2),
                    h.deadLetters, NewPartitions.increaseTo(2), h.decisions, NewPartitions.increaseTo(2))).all().get(30, TimeUnit.SECONDS);
            // Deployments whose key goes to partition 1 of two: on the input, and so on the summaries.
            List<ModelLoaded> later = IntStream.range(0, 200).mapToObj(i -> "grown-" + i)
                    .filter(id -> Utils.toPositive(Utils.murmur2(id.getBytes(StandardCharsets.UTF_8))) % 2 == 1).limit(3)
                    .map(id -> SampleEvents.edgeLoad(id, "r1", 2)).toList();
            assertThat(h.send(later)).extracting(RecordMetadata::partition).containsOnly(1);
            commit(admin, h, 1, 3);

            await().atMost(Duration.ofSeconds(30)).until(() -> registry.get("pa.worker.reconciled").counter().count() == 5);
            await().during(Duration.ofSeconds(5)).atMost(Duration.ofSeconds(10))
                    .until(() -> registry.get("pa.worker.reconciled").counter().count() == 5 && thread.isAlive());
            assertThat(h.resolved(5)).extracting(LoadResolved::getLoadId).map(UUID.class::cast).doesNotHaveDuplicates()
                    .containsAll(later.stream().map(ModelLoaded::getLoadId).map(UUID.class::cast).toList());
            assertThat(h.resolvedRecords(5)).as("a summary on the summaries' new partition").extracting(ConsumerRecord::partition).contains(1);
            assertThat(registry.get("pa.worker.reconcile.overdue").gauge().value()).isZero();
        }
    }

    /**
     * A failure that is not Kafka's (a bug of ours) does not end the reconciler with nothing said: {@code /health} names
     * it while it lasts (no load is proven complete meanwhile), and the reconciler goes on once it passes.
     */
    @Test
    void aFailureOfOursIsOnHealthWhileItLastsAndTheReconcilerGoesOn(KafkaBroker broker) throws Exception {
        WorkerHarness h = new WorkerHarness(broker, 1);
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        AtomicBoolean broken = new AtomicBoolean(true);
        Supplier<Set<Integer>> owned = () -> {
            if (broken.get()) {
                throw new IllegalStateException("the loop's partitions asked at the wrong moment");
            }
            return Set.of(0);
        };
        try (Admin admin = Admin.create(broker.clientConfig()); Alone alone = Alone.start(h, "failing", Map.of(), owned, admin, registry)) {
            Reconciler reconciler = alone.reconciler();
            Thread thread = alone.thread();
            h.send(List.of(SampleEvents.edgeLoad("d0", "r1", 2)));
            commit(admin, h, 0, 1);
            await().atMost(Duration.ofSeconds(30)).until(() -> !reconciler.problems().isEmpty());
            assertThat(reconciler.problems()).singleElement().asString()
                    .contains("the reconciler fails", "the loop's partitions asked at the wrong moment", "no load is proven complete");
            assertThat(thread.isAlive()).isTrue();

            broken.set(false);
            await().atMost(Duration.ofSeconds(30)).until(() -> registry.get("pa.worker.reconciled").counter().count() == 1);
            await().atMost(Duration.ofSeconds(10)).until(() -> reconciler.problems().isEmpty());
        }
    }

    /**
     * The reconciler on its own, as the worker builds it (a look every half second, overdue after 1 s), for a group no loop
     * holds, so a test sets the group's offsets as a lost transaction leaves them; stopped when closed.
     */
    private record Alone(Reconciler reconciler, Thread thread) implements AutoCloseable {
        static Alone start(WorkerHarness h, String instance, Map<String, String> more, Supplier<Set<Integer>> owned, Admin admin,
                           PrometheusMeterRegistry registry) {
            h.broker.createTopics(1, h.decisions, h.resolved, h.deadLetters);
            Map<String, String> settings = h.settings(instance);
            settings.put("worker.reconcile.after", "1s");
            settings.putAll(more);
            Reconciler reconciler = ResolverWorker.reconciler(WorkerConfig.from(Settings.of(settings)), admin,
                    new LoadResolution(WorkerVersion.resolverVersion()), owned, registry);
            Thread thread = new Thread(reconciler, "reconciler-under-test");
            thread.start();
            return new Alone(reconciler, thread);
        }

        @Override
        public void close() throws InterruptedException {
            reconciler.stop();
            thread.join(10_000);
        }
    }

    /** The group's committed offset on one partition of the input, as a transaction that lost its outputs leaves it. */
    private static void commit(Admin admin, WorkerHarness h, int partition, long offset) throws Exception {
        admin.alterConsumerGroupOffsets(h.group, Map.of(new TopicPartition(h.input, partition), new OffsetAndMetadata(offset)))
                .all().get(30, TimeUnit.SECONDS);
    }

    private static boolean heldAndReleased(KafkaBroker broker, WorkerHarness h, ResolverWorker worker, PrometheusMeterRegistry registry)
            throws Exception {
        await().atMost(Duration.ofSeconds(90)).until(() -> worker.problems().stream().anyMatch(p -> p.contains("left hanging")));
        int offsetsPartitions;
        try (Admin admin = Admin.create(broker.clientConfig())) {
            offsetsPartitions = admin.describeTopics(List.of("__consumer_offsets")).allTopicNames().get(10, TimeUnit.SECONDS)
                    .get("__consumer_offsets").partitions().size();
        }
        String partition = Reconciler.groupOffsetsPartition(h.group, offsetsPartitions).toString();
        assertThat(worker.problems()).singleElement().asString().contains("left hanging", partition, "docs/operations.md");
        assertThat(registry.get("pa.worker.hanging.partitions").gauge().value()).isEqualTo(1);
        assertThat(h.openTransactions("__consumer_offsets")).as("the worker did not abort it").contains("pid");

        assertThat(h.abortHanging(worker.problems())).singleElement().asString().startsWith(partition + " ");
        await().atMost(Duration.ofSeconds(30)).until(() -> worker.health().up());
        assertThat(registry.get("pa.worker.hanging.partitions").gauge().value()).isZero();
        return true;
    }
}
