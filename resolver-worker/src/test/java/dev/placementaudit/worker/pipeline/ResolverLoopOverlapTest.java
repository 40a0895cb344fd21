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
    /** What each recovery's look for transactions left open aborts, per producer; nothing at start. */
    private volatile List<TopicPartition> abortedWhenMadeAnew = List.of();
    /** Where the transaction the look aborts began, per partition; unknown (-1) when not said. */
    private final Map<TopicPartition, Long> abortedFrom = new ConcurrentHashMap<>();
    /** What the read_committed witness answers, and each record it was asked about. */
    private volatile boolean witnessSeesIt;
    /** Answers for the witness's first questions, in turn, before {@code witnessSeesIt} answers the rest. */
    private final Deque<Boolean> witnessAnswers = new ConcurrentLinkedDeque<>();
    private final List<String> witnessed = Collections.synchronizedList(new ArrayList<>());
    private final CommitWitness witness = records -> {
        witnessed.add(records.toString());
        Boolean answer = witnessAnswers.poll();
        return answer != null ? answer : witnessSeesIt;
    };
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
        AtomicLong looks = new AtomicLong();
        LeftOpen leftOpen = () -> looks.getAndIncrement() == 0 ? List.of() : abortedWhenMadeAnew.stream()
                .map(partition -> new LeftOpen.Aborted(partition, abortedFrom.getOrDefault(partition, -1L))).toList();
        loop = new ResolverLoop(config, consumer, List.of(first::get, second::get), List.of(leftOpen, LeftOpen.NONE), witness,
                new WorkerMetrics(registry), new LoadResolution("test"), Clock.systemUTC());
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

    /**
     * An outage lost the offsets' part of a transaction that committed: its outputs have their commit markers, its part
     * on the offsets partition none, and the look for transactions left open aborted that part. The group's committed
     * offsets are behind what the loop saw commit (here none at all). Made anew, the loop resumes after what committed
     * and commits those offsets again, instead of resolving the first batch's loads a second time.
     */
    @Test
    void aTransactionWhoseOffsetsAloneAnOutageLostIsNotRedone() {
        abortedWhenMadeAnew = List.of(new TopicPartition("__consumer_offsets", 0));
        witnessAnswers.add(true); // the first batch's records are there; the second's, whose commit timed out, are not
        List<LoggingProducer> anew = committedThenOutage();

        await().atMost(Duration.ofSeconds(10)).until(() -> anew.size() == 2 && anew.get(0).commitCount() == 2);

        assertThat(anew.get(0).consumerGroupOffsetsHistory()).as("the offsets committed again, then the redone second batch's")
                .satisfies(history -> assertThat(history.get(0).values()).containsExactly(Map.of(P0, new OffsetAndMetadata(2))))
                .satisfies(history -> assertThat(history.get(1).values()).containsExactly(Map.of(P0, new OffsetAndMetadata(3))));
        assertThat(registry.counter("pa.worker.offsets.recommitted").count()).isEqualTo(1);
        assertThat(witnessed).as("asked about the first batch, then the second").hasSize(2);
        assertThat(registry.counter("pa.worker.commits.unproven").count()).as("a timed-out commit that did not commit is no split").isZero();
        MockClients.assertExactlyOnce(Stream.of(p0, p1, anew.get(0), anew.get(1)).flatMap(producer -> producer.history().stream()).toList(), loads);
    }

    /**
     * The same outage, but the look for transactions left open aborted the committed transaction's part on an output
     * partition too: its outputs may be gone, so the loop redoes from the group's offsets (a load twice rather than none).
     */
    @Test
    void aTransactionWhoseOutputsWereAbortedTooIsRedone() {
        abortedWhenMadeAnew = List.of(new TopicPartition("allocation-decided", 0), new TopicPartition("__consumer_offsets", 0));
        List<LoggingProducer> anew = committedThenOutage();

        await().atMost(Duration.ofSeconds(10)).until(() -> anew.size() == 2 && anew.get(0).commitCount() == 1);

        assertThat(registry.counter("pa.worker.offsets.recommitted").count()).isZero();
        // The first batch's outputs, committed on p0, were aborted on the broker: what counts is what the new producers wrote.
        MockClients.assertExactlyOnce(Stream.of(p1, anew.get(0), anew.get(1)).flatMap(producer -> producer.history().stream()).toList(), loads);
    }

    /**
     * The same outage, but the first batch's record is not visible read_committed: the commit the loop saw succeed did
     * not hold (an outage brought one back with no marker anywhere, aborted whole). It is redone, not skipped.
     */
    @Test
    void aCommitWhoseFirstRecordIsNotVisibleIsRedoneNotSkipped() {
        abortedWhenMadeAnew = List.of(new TopicPartition("__consumer_offsets", 0));
        witnessSeesIt = false;
        List<LoggingProducer> anew = committedThenOutage();

        await().atMost(Duration.ofSeconds(10)).until(() -> anew.size() == 2 && anew.get(0).commitCount() == 1);

        assertThat(witnessed).as("asked about the first batch's records, once").hasSize(1);
        assertThat(registry.counter("pa.worker.offsets.recommitted").count()).isZero();
        assertThat(registry.counter("pa.worker.commits.unproven").count()).isEqualTo(1);
        MockClients.assertExactlyOnce(Stream.of(p1, anew.get(0), anew.get(1)).flatMap(producer -> producer.history().stream()).toList(), loads);
    }

    /**
     * An outage left the first batch's part on a decisions partition open while its offsets committed (the group stands
     * after it): the look aborts that part, and its records there are gone. The loop redoes the batch from where it
     * began, behind the group's offset, instead of leaving its loads without decisions for good.
     */
    @Test
    void aCommittedTransactionWhoseOutputTheLookAbortedIsRedoneBehindTheGroupsOffset() {
        TopicPartition decided = new TopicPartition("allocation-decided", 0);
        abortedWhenMadeAnew = List.of(decided);
        abortedFrom.put(decided, 0L); // where the first batch's records began there (p0's first record)
        // The group's offsets stand after the first batch, which committed there.
        List<LoggingProducer> anew = committedThenOutage(() -> consumer.commitSync(Map.of(P0, new OffsetAndMetadata(2))));

        await().atMost(Duration.ofSeconds(10)).until(() -> anew.size() == 2 && anew.get(0).commitCount() == 1);

        assertThat(registry.counter("pa.worker.commits.unproven").count()).isEqualTo(1);
        assertThat(anew.get(0).consumerGroupOffsetsHistory()).singleElement()
                .satisfies(offsets -> assertThat(offsets.values()).containsExactly(Map.of(P0, new OffsetAndMetadata(3))));
        // The first batch's records on p0 count for nothing: the broker aborted part of them.
        MockClients.assertExactlyOnce(Stream.of(anew.get(0), anew.get(1)).flatMap(producer -> producer.history().stream()).toList(), loads);
    }

    /**
     * Two outages in a row. At the first, the look aborted the first batch's outputs too (its commit, seen to succeed, did
     * not hold), and the loop redoes everything in one transaction, whose commit times out. At the second, only the
     * offsets partition had a transaction open, and the witness answers yes to whatever it is asked: what the loop saw
     * commit before the first outage is no evidence any more (it was just undone), so what is put back is the redo's own
     * transaction (offset 3), never the first batch's (2). Before the evidence was cleared at each recovery, the
     * broker-outage test lost loads this way.
     */
    @Test
    void whatWasSeenCommittedBeforeAnOutageIsNoEvidenceAtTheNext() {
        witnessSeesIt = true;
        abortedWhenMadeAnew = List.of(new TopicPartition("allocation-decided", 0), new TopicPartition("__consumer_offsets", 0));
        List<LoggingProducer> anew = Collections.synchronizedList(new ArrayList<>());
        firstCommitsSecondTimesOut(() -> { });
        consumer.schedulePollTask(() -> {
            abortedWhenMadeAnew = List.of(new TopicPartition("__consumer_offsets", 0)); // what the second outage leaves
            redeliver(0, 1, 2); // redone on q0, whose commit times out
        });
        consumer.schedulePollTask(() -> { }); // idle: the second timeout is learnt, the producers made anew again
        consumer.schedulePollTask(() -> redeliver(0, 1, 2));
        AtomicLong made = new AtomicLong();
        start(() -> {
            long n = made.getAndIncrement();
            if (n == 0) {
                return p0;
            }
            LoggingProducer producer = new LoggingProducer("q" + n);
            if (n == 1) {
                producer.commitTransactionException = new TimeoutException("Timeout expired after 10000ms while awaiting EndTxn(true)");
            }
            anew.add(producer);
            return producer;
        }, made(p1, "r", Collections.synchronizedList(new ArrayList<>())));

        await().atMost(Duration.ofSeconds(10)).until(() -> anew.size() == 2 && anew.get(1).commitCount() == 1);

        assertThat(witnessed).as("one question: the redo's transaction").hasSize(1);
        assertThat(registry.counter("pa.worker.offsets.recommitted").count()).isEqualTo(1);
        assertThat(anew.get(1).consumerGroupOffsetsHistory()).singleElement()
                .satisfies(offsets -> assertThat(offsets.values()).containsExactly(Map.of(P0, new OffsetAndMetadata(3))));
    }

    /**
     * The first batch commits on p0; the second's commit on p1 times out; both producers are made anew, and the broker
     * offers every record again from the group's committed offsets (none, in the mock).
     */
    private List<LoggingProducer> committedThenOutage() {
        return committedThenOutage(() -> { });
    }

    /** The same, with {@code whileIdle} done in the idle poll where the loop learns of the timeout. */
    private List<LoggingProducer> committedThenOutage(Runnable whileIdle) {
        List<LoggingProducer> anew = Collections.synchronizedList(new ArrayList<>());
        firstCommitsSecondTimesOut(whileIdle);
        consumer.schedulePollTask(() -> redeliver(0, 1, 2));
        start(made(p0, "q0", anew), made(p1, "q1", anew));
        return anew;
    }

    /**
     * The polls up to the first outage: the first batch (0, 1) sent on p0 and committed; the second (2) sent on p1, whose
     * commit times out; the look-ahead; the idle poll where the loop learns of the timeout, doing {@code whileIdle}.
     */
    private void firstCommitsSecondTimesOut(Runnable whileIdle) {
        p1.commitTransactionException = new TimeoutException("Timeout expired after 10000ms while awaiting EndTxn(true)");
        consumer.schedulePollTask(() -> assignAndAdd(0, 1));
        consumer.schedulePollTask(() -> add(2));
        consumer.schedulePollTask(() -> { }); // the look-ahead while the second batch is sent
        consumer.schedulePollTask(whileIdle); // idle: the loop learns of the timeout and makes both producers anew
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
