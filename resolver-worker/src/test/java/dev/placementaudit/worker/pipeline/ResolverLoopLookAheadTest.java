package dev.placementaudit.worker.pipeline;

import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.service.Settings;
import dev.placementaudit.testkit.SampleEvents;
import dev.placementaudit.worker.WorkerConfig;
import dev.placementaudit.resolution.LoadResolution;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The loop polls for the next batches while a transaction waits to commit. These are the ways those look-ahead polls
 * can go wrong, each driven step by step: Kafka's mock clients run a scheduled task inside each poll, which is where a
 * real consumer runs rebalance callbacks. The real-broker tests (ResolverWorkerTest, WorkerCrashTest) cover the
 * same guarantees end to end, but cannot choose the moment a rebalance lands.
 */
class ResolverLoopLookAheadTest {
    private static final String INPUT = "model-loads";
    private static final TopicPartition P0 = new TopicPartition(INPUT, 0);

    private final List<ModelLoaded> loads = List.of(SampleEvents.edgeLoad("d0", "r1", 2), SampleEvents.edgeLoad("d1", "r1", 3),
            SampleEvents.edgeLoad("d2", "r1", 1));
    private final MockConsumer<byte[], byte[]> consumer = new MockConsumer<>("earliest");
    private final MockProducer<byte[], byte[]> producer = new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer());
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final ResolverLoop loop = loop(config());
    private final Thread thread = new Thread(loop, "loop-under-test");
    /** The same clients under a loop that keeps two batches ahead; started by the tests that need it. */
    private final ResolverLoop twoAhead = loop(config(Map.of("worker.batches.ahead", "2")));
    private final Thread twoAheadThread = new Thread(twoAhead, "two-ahead-loop-under-test");

    ResolverLoopLookAheadTest() {
        consumer.updateBeginningOffsets(Map.of(P0, 0L));
    }

    @AfterEach
    void stop() throws InterruptedException {
        loop.shutdown();
        twoAhead.shutdown();
        thread.join(10_000);
        twoAheadThread.join(10_000);
    }

    private ResolverLoop loop(WorkerConfig config) {
        return new ResolverLoop(config, consumer, () -> producer, new WorkerMetrics(registry), new LoadResolution("test"), Clock.systemUTC());
    }

    @Test
    void aRevocationDuringTheLookAheadCommitsTheOpenTransactionBeforeThePartitionsMove() {
        AtomicLong commitsWhenRevoked = new AtomicLong(-1);
        consumer.schedulePollTask(() -> assignAndAdd(0, 1));
        consumer.schedulePollTask(() -> {
            consumer.rebalance(List.of());
            commitsWhenRevoked.set(producer.commitCount());
        });

        thread.start();
        await().atMost(Duration.ofSeconds(10)).until(() -> commitsWhenRevoked.get() >= 0);

        assertThat(commitsWhenRevoked).as("committed inside the revocation, before poll returned").hasValue(1);
        assertThat(aborted()).isZero();
        assertThat(producer.consumerGroupOffsetsHistory()).singleElement()
                .satisfies(offsets -> assertThat(offsets.values()).containsExactly(Map.of(P0, new OffsetAndMetadata(2))));
        assertExactlyOnce(loads.subList(0, 2));
    }

    @Test
    void lostPartitionsAbortTheOpenTransactionAndTheBatchIsRedoneOnce() {
        consumer.schedulePollTask(() -> assignAndAdd(0, 1));
        consumer.schedulePollTask(() -> consumer.losePartitions(List.of(P0)));
        consumer.schedulePollTask(() -> assignAndAdd(0, 1));

        thread.start();
        await().atMost(Duration.ofSeconds(10)).until(() -> producer.commitCount() == 1);

        assertThat(aborted()).as("the transaction open when the partition was lost").isEqualTo(1);
        assertExactlyOnce(loads.subList(0, 2));
    }

    @Test
    void aShutdownDuringTheLookAheadStillCommitsTheOpenTransaction() throws InterruptedException {
        consumer.schedulePollTask(() -> assignAndAdd(0, 1));
        consumer.schedulePollTask(loop::shutdown);

        thread.start();
        thread.join(10_000);

        assertThat(loop.state()).isEqualTo(ResolverLoop.State.STOPPED);
        assertThat(producer.commitCount()).isEqualTo(1);
        assertExactlyOnce(loads.subList(0, 2));
    }

    @Test
    void aFailedCommitDiscardsTheBatchesAheadAndRedoesEveryRecordOnce() {
        producer.commitTransactionException = new KafkaException("the coordinator said no");
        consumer.schedulePollTask(() -> assignAndAdd(0));
        consumer.schedulePollTask(() -> add(1)); // two batches ahead when the commit fails
        consumer.schedulePollTask(() -> add(2));
        consumer.schedulePollTask(() -> {
            producer.commitTransactionException = null;
            redeliver(0, 1, 2);
        });

        twoAheadThread.start();
        await().atMost(Duration.ofSeconds(10)).until(() -> producer.commitCount() == 3);

        assertThat(aborted()).isEqualTo(1);
        assertExactlyOnce(loads);
        assertThat(producer.consumerGroupOffsetsHistory()).last()
                .satisfies(offsets -> assertThat(offsets.values()).containsExactly(Map.of(P0, new OffsetAndMetadata(3))));
    }

    /**
     * Two batches are ahead when the partition P1 moves to another worker: the open transaction commits, and P1's
     * record still ahead is dropped unsent, for the partition's next owner to read from the committed offset. The
     * other partition's record ahead is still produced, once.
     */
    @Test
    void aRevocationDropsTheRecordsAheadOfTheLeavingPartitionOnly() {
        // Two batches ahead: the one sent next and the one after it, which still holds the leaving partition's record.
        TopicPartition p1 = new TopicPartition(INPUT, 1);
        consumer.updateBeginningOffsets(Map.of(p1, 0L));
        List<ModelLoaded> onP0 = List.of(SampleEvents.edgeLoad("a0", "r1", 2), SampleEvents.edgeLoad("a1", "r1", 1),
                SampleEvents.edgeLoad("a2", "r1", 3));
        List<ModelLoaded> onP1 = List.of(SampleEvents.edgeLoad("b0", "r1", 1), SampleEvents.edgeLoad("b1", "r1", 2),
                SampleEvents.edgeLoad("b2", "r1", 2));
        AtomicLong commitsWhenRevoked = new AtomicLong(-1);
        consumer.schedulePollTask(() -> {
            consumer.rebalance(List.of(P0, p1));
            add(P0, 0, onP0.get(0));
            add(p1, 0, onP1.get(0));
        });
        consumer.schedulePollTask(() -> { // look-ahead while the first batch commits: two more batches
            add(P0, 1, onP0.get(1));
            add(p1, 1, onP1.get(1));
        });
        consumer.schedulePollTask(() -> {
            add(P0, 2, onP0.get(2));
            add(p1, 2, onP1.get(2));
        });
        consumer.schedulePollTask(() -> { // look-ahead while the second batch commits; the third is still ahead
            consumer.rebalance(List.of(P0));
            commitsWhenRevoked.set(producer.commitCount());
        });

        twoAheadThread.start();
        await().atMost(Duration.ofSeconds(10)).until(() -> producer.commitCount() == 3);

        assertThat(commitsWhenRevoked).as("the second batch committed inside the revocation").hasValue(2);
        assertThat(aborted()).isZero();
        assertThat(producer.consumerGroupOffsetsHistory()).extracting(offsets -> offsets.values().iterator().next()).containsExactly(
                Map.of(P0, new OffsetAndMetadata(1), p1, new OffsetAndMetadata(1)),
                Map.of(P0, new OffsetAndMetadata(2), p1, new OffsetAndMetadata(2)),
                Map.of(P0, new OffsetAndMetadata(3)));
        assertExactlyOnce(List.of(onP0.get(0), onP0.get(1), onP0.get(2), onP1.get(0), onP1.get(1)));
    }

    @Test
    void withNoBatchesAheadTheNextPollWaitsForTheCommit() throws InterruptedException {
        ResolverLoop sequential = loop(config(Map.of("worker.batches.ahead", "0")));
        AtomicLong commitsAtSecondPoll = new AtomicLong(-1);
        consumer.schedulePollTask(() -> assignAndAdd(0, 1));
        consumer.schedulePollTask(() -> commitsAtSecondPoll.set(producer.commitCount()));

        Thread sequentialThread = new Thread(sequential, "sequential-loop-under-test");
        sequentialThread.start();
        try {
            await().atMost(Duration.ofSeconds(10)).until(() -> commitsAtSecondPoll.get() >= 0);
        } finally {
            sequential.shutdown();
            sequentialThread.join(10_000);
        }

        assertThat(commitsAtSecondPoll).hasValue(1);
        assertExactlyOnce(loads.subList(0, 2));
    }

    @Test
    void byDefaultTheNextPollRunsWhileTheTransactionIsOpen() {
        AtomicLong commitsAtSecondPoll = new AtomicLong(-1);
        consumer.schedulePollTask(() -> assignAndAdd(0, 1));
        consumer.schedulePollTask(() -> commitsAtSecondPoll.set(producer.commitCount()));

        thread.start();
        await().atMost(Duration.ofSeconds(10)).until(() -> producer.commitCount() == 1);

        assertThat(commitsAtSecondPoll).hasValue(0);
        assertExactlyOnce(loads.subList(0, 2));
    }

    private double aborted() {
        return MockClients.aborted(registry);
    }

    private void assignAndAdd(int... offsets) {
        consumer.rebalance(List.of(P0));
        redeliver(offsets);
    }

    /**
     * The mock consumer hands out what was added and forgets it, and a rebalance clears it; a broker keeps its log.
     * So after the loop rewinds, the test plays the broker and offers the records from the rewound offset again.
     */
    private void redeliver(int... offsets) {
        for (int offset : offsets) {
            add(offset);
        }
    }

    private void add(int offset) {
        add(P0, offset, loads.get(offset));
    }

    private void add(TopicPartition partition, long offset, ModelLoaded load) {
        consumer.addRecord(MockClients.input(partition, offset, load));
    }

    private void assertExactlyOnce(List<ModelLoaded> expected) {
        MockClients.assertExactlyOnce(producer.history(), expected);
    }

    private static WorkerConfig config() {
        return config(Map.of());
    }

    private static WorkerConfig config(Map<String, String> more) {
        Map<String, String> settings = new java.util.HashMap<>(Map.of("kafka.bootstrap.servers", "unused:9092", "worker.input.topic", INPUT,
                "worker.instance.id", "look-ahead-test", "worker.poll.timeout", "10ms", "worker.http.port", "-1"));
        settings.putAll(more);
        return WorkerConfig.from(Settings.of(settings));
    }
}
