package dev.placementaudit.worker.pipeline;

import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.service.Settings;
import dev.placementaudit.testkit.SampleEvents;
import dev.placementaudit.worker.WorkerConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Commits that overlap the next batch's sends ({@code worker.commit.overlap}, on by default): two transactional
 * producers used in turn, a batch's commit on the committing thread while the loop sends the next batch on the other.
 * Each way it can go wrong is driven step by step with Kafka's mock clients, whose producers here write every call to
 * one shared log, so that what happened while what is visible: the next batch's records are sent only once the
 * previous batch's are written (a partition's records stay in input order, which the store's history relies on), a
 * later batch never commits unless the earlier one did, and a failed commit is redone whether or not more input comes.
 */
class ResolverLoopOverlapTest {
    private static final String INPUT = "model-loads";
    private static final TopicPartition P0 = new TopicPartition(INPUT, 0);

    private final List<ModelLoaded> loads = List.of(SampleEvents.edgeLoad("d0", "r1", 2), SampleEvents.edgeLoad("d0", "r2", 3),
            SampleEvents.edgeLoad("d0", "r3", 1));
    private final MockConsumer<byte[], byte[]> consumer = new MockConsumer<>("earliest");
    /** Every call of either producer, in the order they happened: "p0 send", "p1 flush", "p0 commit ended", ... */
    private final List<String> calls = Collections.synchronizedList(new ArrayList<>());
    private final LoggingProducer p0 = new LoggingProducer("p0");
    private final LoggingProducer p1 = new LoggingProducer("p1");
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private ResolverLoop loop;
    private Thread thread;

    ResolverLoopOverlapTest() {
        consumer.updateBeginningOffsets(Map.of(P0, 0L));
    }

    @AfterEach
    void stop() throws InterruptedException {
        if (loop != null) {
            loop.shutdown();
            thread.join(10_000);
        }
    }

    private void start(Supplier<MockProducer<byte[], byte[]>> second) {
        start(() -> p0, second);
    }

    private void start(Supplier<MockProducer<byte[], byte[]>> first, Supplier<MockProducer<byte[], byte[]>> second) {
        WorkerConfig config = WorkerConfig.from(Settings.of(Map.of("kafka.bootstrap.servers", "unused:9092", "worker.input.topic", INPUT,
                "worker.instance.id", "overlap-test", "worker.poll.timeout", "10ms", "worker.http.port", "-1")));
        loop = new ResolverLoop(config, consumer, List.of(first::get, second::get), new WorkerMetrics(registry), new LoadResolution("test"),
                Clock.systemUTC());
        thread = new Thread(loop, "overlap-loop-under-test");
        thread.start();
    }

    @Test
    void theNextBatchIsSentWhileThePreviousCommitsButNeverBeforeItsRecordsAreWritten() {
        p0.commitWaitsFor = () -> p1.sends() > 0; // the first commit ends only once the second batch is being sent
        consumer.schedulePollTask(() -> assignAndAdd(0, 1));
        consumer.schedulePollTask(() -> add(2)); // polled ahead while the first batch is sent

        start(() -> p1);
        await().atMost(Duration.ofSeconds(10)).until(() -> p0.commitCount() + p1.commitCount() == 2);

        assertThat(p0.overlapped).as("p0's commit saw p1 send").isTrue();
        assertThat(calls).as("the second batch's first send comes after the first batch's flush, before its commit ended")
                .containsSubsequence("p0 flush", "p1 send", "p0 commit ended", "p1 flush", "p1 commit ended");
        assertOnePartitionOrder();
        assertThat(p0.consumerGroupOffsetsHistory()).singleElement()
                .satisfies(offsets -> assertThat(offsets.values()).containsExactly(Map.of(P0, new OffsetAndMetadata(2))));
        assertThat(p1.consumerGroupOffsetsHistory()).singleElement()
                .satisfies(offsets -> assertThat(offsets.values()).containsExactly(Map.of(P0, new OffsetAndMetadata(3))));
        assertExactlyOnce(loads);
    }

    @Test
    void aFailedCommitAbortsTheBatchSentMeanwhileAndBothAreRedoneOnce() {
        p0.commitTransactionException = new KafkaException("the coordinator said no");
        consumer.schedulePollTask(() -> assignAndAdd(0, 1));
        consumer.schedulePollTask(() -> add(2)); // the second batch, sent on p1 while p0's commit fails
        consumer.schedulePollTask(() -> { }); // the look-ahead while the second batch is sent: nothing more
        consumer.schedulePollTask(() -> {
            p0.commitTransactionException = null;
            redeliver(0, 1, 2); // after the rewind, the broker still has every record
        });

        start(() -> p1);
        // Not a rebalance, so the redo isolates: one transaction per record.
        await().atMost(Duration.ofSeconds(10)).until(() -> p0.commitCount() + p1.commitCount() == 3);

        assertThat(calls).as("the second batch is never committed on its own").containsSubsequence("p0 abort", "p1 abort", "p1 commit ended");
        assertThat(calls).filteredOn(call -> call.endsWith("commit ended")).hasSize(3);
        assertThat(aborted()).isEqualTo(2);
        assertExactlyOnce(loads);
        assertThat(p1.consumerGroupOffsetsHistory()).last()
                .satisfies(offsets -> assertThat(offsets.values()).containsExactly(Map.of(P0, new OffsetAndMetadata(3))));
    }

    /** With no more input there is no next batch to find the failure: the idle poll waits for the commit instead. */
    @Test
    void aCommitThatFailsWhenNoMoreInputComesIsRedoneAllTheSame() {
        p0.commitTransactionException = new KafkaException("the coordinator said no");
        consumer.schedulePollTask(() -> assignAndAdd(0, 1));
        consumer.schedulePollTask(() -> { }); // the look-ahead: nothing
        consumer.schedulePollTask(() -> { // idle: nothing new, once the commit has failed on the committing thread
            await().atMost(Duration.ofSeconds(5)).until(() -> calls.contains("p0 commit failed"));
            p0.commitTransactionException = null;
        });
        consumer.schedulePollTask(() -> redeliver(0, 1)); // offered again: polled only if the loop rewound

        start(() -> p1);
        await().atMost(Duration.ofSeconds(10)).until(() -> p0.commitCount() + p1.commitCount() == 2); // isolated: one per record

        assertExactlyOnce(loads.subList(0, 2));
    }

    /**
     * The partitions move while the first batch still commits and the second is sent: the revocation waits for the
     * first commit, then commits the second, both before the partitions move.
     */
    @Test
    void aRevocationSettlesTheCommitInFlightThenCommitsTheOpenTransaction() {
        p0.commitDelayMillis = 200;
        AtomicLong commitsWhenRevoked = new AtomicLong(-1);
        consumer.schedulePollTask(() -> assignAndAdd(0, 1));
        consumer.schedulePollTask(() -> add(2));
        consumer.schedulePollTask(() -> { // the look-ahead while the second batch is open and the first commits
            consumer.rebalance(List.of());
            commitsWhenRevoked.set(p0.commitCount() + p1.commitCount());
        });

        start(() -> p1);
        await().atMost(Duration.ofSeconds(10)).until(() -> commitsWhenRevoked.get() >= 0);

        assertThat(commitsWhenRevoked).as("both committed inside the revocation").hasValue(2);
        assertThat(calls).containsSubsequence("p0 commit ended", "p1 commit ended");
        assertExactlyOnce(loads);
    }

    @Test
    void aShutdownWaitsForTheCommitInFlight() throws InterruptedException {
        p0.commitDelayMillis = 200;
        consumer.schedulePollTask(() -> assignAndAdd(0, 1));
        consumer.schedulePollTask(() -> loop.shutdown());

        start(() -> p1);
        thread.join(10_000);

        assertThat(loop.state()).isEqualTo(ResolverLoop.State.STOPPED);
        assertThat(p0.commitCount()).isEqualTo(1);
        assertThat(calls).containsSubsequence("p0 commit ended", "p0 closed");
        assertExactlyOnce(loads.subList(0, 2));
    }

    /**
     * A commit that times out on the committing thread leaves its producer unusable, never aborted by the client (ADR
     * 11): the loop learns of it when it hands over the next batch, makes both producers anew once nothing is in
     * flight, and redoes both batches from the committed offsets.
     */
    @Test
    void aCommitThatTimesOutOnTheCommittingThreadMakesBothProducersAnew() {
        p0.commitTransactionException = new TimeoutException("Timeout expired after 60000ms while awaiting EndTxn(true)");
        List<LoggingProducer> anew = Collections.synchronizedList(new ArrayList<>());
        consumer.schedulePollTask(() -> assignAndAdd(0, 1));
        consumer.schedulePollTask(() -> add(2)); // the second batch, sent on p1 while p0's commit times out
        consumer.schedulePollTask(() -> { }); // the look-ahead while the second batch is sent
        consumer.schedulePollTask(() -> redeliver(0, 1, 2)); // after the new producers rewound: nothing was committed

        start(made(p0, "q0", anew), made(p1, "q1", anew));
        await().atMost(Duration.ofSeconds(10)).until(() -> anew.stream().mapToLong(MockProducer::commitCount).sum() == 1);

        assertThat(p0.transactionAborted()).as("no client-side abort after a timeout").isFalse();
        assertThat(p0.closed()).isTrue();
        assertThat(p1.closed()).isTrue();
        assertThat(anew).extracting(producer -> producer.name).containsExactly("q0", "q1");
        assertThat(registry.counter("pa.worker.producer.recreated").count()).isEqualTo(1);
        MockClients.assertExactlyOnce(Stream.of(p0, p1, anew.get(0), anew.get(1)).flatMap(producer -> producer.history().stream()).toList(), loads);
        assertThat(loop.state()).isEqualTo(ResolverLoop.State.RUNNING);
    }

    /** The given producer first; every later call a new one, named so, noted in {@code anew}. */
    private Supplier<MockProducer<byte[], byte[]>> made(LoggingProducer first, String later, List<LoggingProducer> anew) {
        AtomicLong calls = new AtomicLong();
        return () -> {
            if (calls.getAndIncrement() == 0) {
                return first;
            }
            LoggingProducer producer = new LoggingProducer(later);
            anew.add(producer);
            return producer;
        };
    }

    /** Rights that name the first transactional id only: the loop commits one batch at a time on it, as before. */
    @Test
    void aSecondTransactionalIdWithoutRightsFallsBackToOneProducer() {
        p1.initTransactionException = new TransactionalIdAuthorizationException("Transactional Id authorization failed.");
        consumer.schedulePollTask(() -> assignAndAdd(0, 1));
        consumer.schedulePollTask(() -> add(2));

        start(() -> p1);
        await().atMost(Duration.ofSeconds(10)).until(() -> p0.commitCount() == 2);

        assertThat(loop.state()).isEqualTo(ResolverLoop.State.RUNNING);
        assertThat(p1.history()).isEmpty();
        assertThat(p1.closed()).isTrue();
        assertExactlyOnce(loads);
    }

    /**
     * The order the broker keeps: a send by one producer while the other has records not yet written (not flushed,
     * committed or aborted) could land before them on a partition.
     */
    private void assertOnePartitionOrder() {
        Map<String, Boolean> unwritten = new HashMap<>(Map.of("p0", false, "p1", false));
        synchronized (calls) {
            for (String call : calls) {
                String producer = call.substring(0, 2);
                String other = producer.equals("p0") ? "p1" : "p0";
                if (call.endsWith(" send")) {
                    assertThat(unwritten.get(other)).as("%s sent while %s had records not yet written: %s", producer, other, calls).isFalse();
                    unwritten.put(producer, true);
                } else if (call.endsWith(" flush") || call.endsWith(" commit ended") || call.endsWith(" abort")) {
                    unwritten.put(producer, false);
                }
            }
        }
    }

    private double aborted() {
        return MockClients.aborted(registry);
    }

    private void assignAndAdd(int... offsets) {
        consumer.rebalance(List.of(P0));
        redeliver(offsets);
    }

    private void redeliver(int... offsets) {
        for (int offset : offsets) {
            add(offset);
        }
    }

    private void add(int offset) {
        consumer.addRecord(MockClients.input(P0, offset, loads.get(offset)));
    }

    /** Every output committed by either producer, counted per load: each decision and the summary exactly once. */
    private void assertExactlyOnce(List<ModelLoaded> expected) {
        MockClients.assertExactlyOnce(Stream.concat(p0.history().stream(), p1.history().stream()).toList(), expected);
    }

    /** A mock producer that writes its calls to the shared log, and whose commit can be made slow or made to wait. */
    private final class LoggingProducer extends MockProducer<byte[], byte[]> {
        private final String name;
        private final AtomicLong sent = new AtomicLong();
        volatile long commitDelayMillis;
        volatile Supplier<Boolean> commitWaitsFor;
        volatile boolean overlapped;

        LoggingProducer(String name) {
            super(true, null, new ByteArraySerializer(), new ByteArraySerializer());
            this.name = name;
        }

        long sends() {
            return sent.get();
        }

        @Override
        public synchronized Future<RecordMetadata> send(ProducerRecord<byte[], byte[]> record) {
            calls.add(name + " send");
            sent.incrementAndGet();
            return super.send(record);
        }

        @Override
        public synchronized void flush() {
            calls.add(name + " flush");
            super.flush();
        }

        @Override
        public void commitTransaction() {
            Supplier<Boolean> waitFor = commitWaitsFor;
            if (waitFor != null) {
                commitWaitsFor = null;
                long until = System.nanoTime() + Duration.ofSeconds(5).toNanos();
                while (!waitFor.get() && System.nanoTime() < until) {
                    Thread.onSpinWait();
                }
                overlapped = waitFor.get();
            }
            if (commitDelayMillis > 0) {
                try {
                    Thread.sleep(commitDelayMillis);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            try {
                super.commitTransaction();
                calls.add(name + " commit ended");
            } catch (RuntimeException e) {
                calls.add(name + " commit failed");
                throw e;
            }
        }

        @Override
        public void abortTransaction() {
            calls.add(name + " abort");
            super.abortTransaction();
        }

        @Override
        public void close(Duration timeout) {
            calls.add(name + " closed");
            super.close(timeout);
        }
    }
}
