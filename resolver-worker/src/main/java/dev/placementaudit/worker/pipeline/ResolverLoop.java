package dev.placementaudit.worker.pipeline;

import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.service.ConsumerLoop;
import dev.placementaudit.service.ConsumerVitals;
import dev.placementaudit.service.DeadLetter;
import dev.placementaudit.worker.WorkerConfig;
import dev.placementaudit.worker.pipeline.Transactions.OpenTransaction;
import dev.placementaudit.worker.pipeline.Transactions.Outcome;
import dev.placementaudit.worker.pipeline.WorkerMetrics.Phase;
import io.micrometer.core.instrument.Timer;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.function.Supplier;

/**
 * consume → resolve → produce, exactly once (Kafka EOS v2): each poll's records become one transaction holding
 * every AllocationDecided, every LoadResolved, every dead letter and the consumer offsets, committed with the
 * group's metadata so a zombie from an older generation is fenced. A crash at any point leaves either all of a
 * batch visible to read_committed consumers or none of it; the batch is then redone from the committed offsets,
 * with the same decision ids.
 *
 * <p>Batches are pipelined: once a batch's outputs are sent, the loop polls without blocking for up to
 * {@code worker.batches.ahead} (1) more batches and starts preparing them, then commits, so the preparing threads
 * work while the commit waits on the transaction coordinator's round trips; with 2 or more, they also have the
 * next batch while this one's outputs are sent (the Kafka client compresses them on the loop thread). Polling while a
 * transaction is open is what Kafka Streams does too, and it needs the same care: a rebalance inside that poll
 * commits the open transaction before the partitions move (or aborts it when they are lost) and drops the batches
 * ahead's records of the partitions that leave, which their next owner reads again from the committed offsets; a
 * failed commit discards every batch ahead, which is pure work, and rewinds to the committed offsets. What a
 * transaction holds is unchanged: one poll's records, whose outputs are sent only after the previous transaction
 * committed.
 *
 * <p>Nothing stalls a partition: undecodable and invalid loads go to the dead-letter topic inside the same
 * transaction; if a whole batch keeps failing to commit for a reason that is not a rebalance, the next attempt
 * runs one record per transaction and dead-letters the one record whose outputs cannot be produced.
 *
 * <p>Nothing wedges it either: a broker outage leaves a transactional producer in a state it cannot leave (a fatal
 * error, any call of a transaction that timed out, an epoch the coordinator bumped when it aborted a transaction that
 * outlived its timeout). After a timeout the client never aborts: what the transaction holds is then the broker's to
 * settle (see {@link TransactionalProducer}). The loop then closes that producer, builds a new one with the same
 * transactional id (whose {@code initTransactions} aborts whatever the old one left open, retried until the broker
 * answers), aborts what an older incarnation left open where the coordinator no longer knows of it
 * ({@link HangingTransactions}), keeps the consumer and its group membership, and redoes from the committed offsets.
 * Only real fencing stops it: the consumer's static membership taken by another process
 * ({@link FencedInstanceIdException}), or the producer fenced again before any transaction of its new incarnation
 * committed (another live instance keeps taking the id).
 */
public final class ResolverLoop extends ConsumerLoop {
    private static final Logger LOG = LoggerFactory.getLogger(ResolverLoop.class);
    private static final Duration MAX_BACKOFF = Duration.ofSeconds(5);

    private final WorkerConfig config;
    /** Made at start, and again whenever an outage has left it unusable. */
    private final TransactionalProducer producer;
    private final WorkerMetrics metrics;
    private final Clock clock;
    private final LoadResolution resolution;
    private final RecordPreparation preparation;
    private final LeftOpen hanging;

    private boolean isolateNextBatch;
    private int consecutiveFailures;
    /** Why the producer is being made anew, while it is; null otherwise (shown by {@code /health}). */
    private volatile String recovering;
    /** The batch whose outputs are sent but not yet committed; only ever touched on the loop thread. */
    private OpenTransaction open;
    /** Polled, being prepared, nothing sent yet, oldest first; only ever touched on the loop thread. */
    private final Deque<Batch> ahead = new ArrayDeque<>();
    /** A look-ahead poll's failure, raised once the open transaction has committed. */
    private KafkaException pollFailure;

    public ResolverLoop(WorkerConfig config, Consumer<byte[], byte[]> consumer, Supplier<Producer<byte[], byte[]>> producers,
                        WorkerMetrics metrics, LoadResolution resolution, Clock clock) {
        this(config, consumer, producers, LeftOpen.NONE, metrics, resolution, clock);
    }

    /** @param hanging asked, each time the producer is made, to abort what an older incarnation left open */
    ResolverLoop(WorkerConfig config, Consumer<byte[], byte[]> consumer, Supplier<Producer<byte[], byte[]>> producers,
                 LeftOpen hanging, WorkerMetrics metrics, LoadResolution resolution, Clock clock) {
        super("resolver loop", consumer, new ConsumerVitals(config.healthBound(), clock), LOG);
        this.hanging = hanging;
        this.config = config;
        this.producer = new TransactionalProducer(producers);
        this.metrics = metrics;
        this.clock = clock;
        this.resolution = resolution;
        this.preparation = new RecordPreparation(config, resolution, clock);
    }

    @Override
    protected void begin() {
        producer.make();
        // A transaction an earlier run left open on the group's offsets would keep the consumer from ever learning where
        // to start: a failure to look is retried a few times before going on.
        for (int attempt = 1; attempt <= 3; attempt++) {
            try {
                abortLeftOpen();
                break;
            } catch (KafkaException e) {
                LOG.warn("looking for transactions an earlier run left open failed (attempt {} of 3): {}", attempt, e.toString());
                pause(backoffMillis(attempt, 100, MAX_BACKOFF));
            }
        }
        consumer.subscribe(List.of(config.inputTopic()), new Rebalances());
    }

    @Override
    protected void step() {
        try {
            batchStep();
        } catch (ProducerFencedException | InvalidProducerEpochException | OutOfOrderSequenceException | TransactionalProducer.Unusable e) {
            recover(e);
        }
    }

    @Override
    protected void failed(Throwable e) {
        if (e instanceof ProducerFencedException || e instanceof FencedInstanceIdException) {
            LOG.error("fenced: another live worker now owns {} {}; stopping this one",
                    e instanceof FencedInstanceIdException ? "group instance id" : "transactional id",
                    e instanceof FencedInstanceIdException ? config.instanceId() : config.transactionalId(), e);
        } else {
            super.failed(e);
        }
    }

    /** One batch: polled (or taken from those ahead), turned into one transaction (or one per record), committed. */
    private void batchStep() {
        Batch batch = ahead.isEmpty() ? poll(config.pollTimeout(), !isolateNextBatch) : ahead.removeFirst();
        if (batch.isEmpty()) {
            return;
        }
        boolean committed = isolateNextBatch ? processOneByOne(batch.records()) : processBatch(batch);
        isolateNextBatch = !committed && isolateNextBatch;
        backOffAfter(committed);
        if (pollFailure != null) {
            KafkaException failed = pollFailure;
            pollFailure = null;
            throw failed;
        }
    }

    /**
     * The producer cannot go on: it is closed and made anew with the same transactional id, whose
     * {@code initTransactions} bumps the epoch and aborts what the old one left open, retried with back-off for as
     * long as the broker is away. Every batch ahead is dropped and the consumer, still a member of its group, is
     * rewound to the committed offsets: what was sent and not committed is redone, with the same decision ids.
     *
     * @throws ProducerFencedException when fenced again before anything committed since the last recovery: another live
     *                                 instance owns the transactional id
     */
    private void recover(KafkaException cause) {
        if (cause instanceof ProducerFencedException fenced) {
            producer.fenced(fenced);
        }
        recovering = cause.toString();
        LOG.warn("the transactional producer cannot go on ({}); making it anew and redoing from the committed offsets", Failures.rootCause(cause));
        metrics.producerRecreated();
        open = null;
        ahead.forEach(Batch::cancel);
        ahead.clear();
        isolateNextBatch = false;
        int attempt = 0;
        while (running()) {
            try {
                producer.make();
                abortLeftOpen();
                Offsets.seekToCommitted(consumer);
                LOG.info("transactional producer made anew after {} attempt(s); resuming from the committed offsets", attempt + 1);
                recovering = null;
                return;
            } catch (WakeupException e) {
                throw e;
            } catch (KafkaException e) {
                attempt++;
                LOG.warn("making the transactional producer anew failed (attempt {}): {}; retrying", attempt, e.toString());
                pause(backoffMillis(attempt, 100, MAX_BACKOFF));
            }
        }
    }

    /** After the producer is made: what older incarnations left open is aborted before this one writes. */
    private void abortLeftOpen() {
        int aborted = hanging.abortLeftOpen();
        if (aborted > 0) {
            metrics.hangingAborted(aborted);
        }
    }

    /** Why the producer is being made anew right now, or null: the loop is recovering from a broker outage. */
    public String recovering() {
        return recovering;
    }

    /**
     * One transaction for the batch. Returns whether it committed; when it was aborted instead, the batches ahead
     * are dropped and the consumer is rewound to the committed offsets.
     */
    private boolean processBatch(Batch batch) {
        Timer.Sample sample = Timer.start();
        try {
            producer.begin();
            open = new OpenTransaction(Offsets.nextOffsets(batch.records()), new Outcome());
            long resolving = 0;
            long sending = 0;
            for (Future<Prepared> one : batch.prepared()) {
                long asked = System.nanoTime();
                Prepared prepared = RecordPreparation.await(one);
                long ready = System.nanoTime();
                send(prepared, open.outcome);
                resolving += ready - asked;
                sending += System.nanoTime() - ready;
            }
            metrics.phase(Phase.RESOLVING, resolving);
            metrics.phase(Phase.SENDING, sending);
            long polling = System.nanoTime();
            lookAhead();
            long committing = System.nanoTime();
            metrics.phase(Phase.POLLING, committing - polling);
            if (open != null) {
                commit(open.offsets, open.outcome);
                open = null;
            }
            metrics.phase(Phase.COMMITTING, System.nanoTime() - committing);
            sample.stop(metrics.batchTimer());
            return true;
        } catch (ProducerFencedException | InvalidProducerEpochException | OutOfOrderSequenceException | AuthorizationException
                 | FencedInstanceIdException | TransactionalProducer.Unusable e) {
            throw e;
        } catch (KafkaException e) {
            open = null;
            abortAndRewind(e);
            // A rebalance is not the batch's fault; anything else might be one record's, so isolate it next time.
            isolateNextBatch = !Failures.isGroupChange(e);
            return false;
        }
    }

    /**
     * Polls without blocking while the open transaction waits to commit, until the configured number of batches are
     * ahead or nothing more has been fetched, and starts preparing what came back. A rebalance in these polls settles the
     * open transaction in {@link Rebalances}; if that commit failed, its error is rethrown here so the batch takes
     * the abort-and-rewind path. A shutdown request ends the look-ahead but not the open transaction, which still
     * commits. Any other poll failure is kept for after the commit, where it ends the loop just as it would have
     * from the next regular poll.
     */
    private void lookAhead() {
        try {
            while (ahead.size() < config.batchesAhead() && running()) {
                Batch more = poll(Duration.ZERO, true);
                if (more.isEmpty()) {
                    break;
                }
                ahead.addLast(more);
            }
        } catch (WakeupException e) {
            if (running()) {
                throw e;
            }
        } catch (KafkaException e) {
            pollFailure = e;
        }
        if (open != null && open.failure != null) {
            throw open.failure;
        }
    }

    private Batch poll(Duration timeout, boolean prepare) {
        ConsumerRecords<byte[], byte[]> polled = poll(timeout);
        metrics.lag((long) vitals().lag());
        if (polled.isEmpty()) {
            return Batch.NONE;
        }
        List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>(polled.count());
        polled.forEach(records::add);
        return new Batch(records, prepare ? preparation.prepareAll(records) : List.of());
    }

    /**
     * After a rebalance: records of partitions this worker no longer owns leave the batches ahead, unsent. Their
     * next owner, or this worker if they come back, reads them again from the committed offset.
     */
    private void dropAhead(Collection<TopicPartition> leaving) {
        int before = ahead.size();
        for (int i = 0; i < before; i++) {
            Batch kept = ahead.removeFirst().without(leaving);
            if (!kept.isEmpty()) {
                ahead.addLast(kept);
            }
        }
    }

    /** Drops every batch ahead, unsent, and seeks back to the committed offsets. */
    private void rewind() {
        ahead.forEach(Batch::cancel);
        ahead.clear();
        Offsets.seekToCommitted(consumer);
    }

    /** One transaction per record; the record whose outputs cannot be produced is dead-lettered on its own. */
    private boolean processOneByOne(List<ConsumerRecord<byte[], byte[]>> records) {
        LOG.warn("isolating {} records after a failed transaction", records.size());
        for (ConsumerRecord<byte[], byte[]> record : records) {
            KafkaException failed = tryAlone(record);
            if (failed == null) {
                continue;
            }
            if (Failures.isGroupChange(failed) || tryAlone(record) == null) {
                return false;
            }
            try {
                Outcome outcome = new Outcome();
                producer.begin();
                deadLetter(record, DeadLetter.Reason.PRODUCE_FAILED, Failures.rootName(failed), null, Failures.causeChain(failed), outcome);
                commit(Map.of(Offsets.partition(record), new OffsetAndMetadata(record.offset() + 1)), outcome);
            } catch (ProducerFencedException | InvalidProducerEpochException | OutOfOrderSequenceException | AuthorizationException
                     | FencedInstanceIdException | TransactionalProducer.Unusable e) {
                throw e;
            } catch (KafkaException e) {
                abortAndRewind(e);
                return false;
            }
        }
        isolateNextBatch = false;
        return true;
    }

    private KafkaException tryAlone(ConsumerRecord<byte[], byte[]> record) {
        Outcome outcome = new Outcome();
        try {
            Prepared prepared = preparation.prepare(record);
            producer.begin();
            send(prepared, outcome);
            commit(Map.of(Offsets.partition(record), new OffsetAndMetadata(record.offset() + 1)), outcome);
            return null;
        } catch (ProducerFencedException | InvalidProducerEpochException | OutOfOrderSequenceException | AuthorizationException
                 | FencedInstanceIdException | TransactionalProducer.Unusable e) {
            throw e;
        } catch (KafkaException e) {
            producer.abortQuietly();
            metrics.aborted();
            return e;
        }
    }

    private void send(Prepared prepared, Outcome outcome) {
        if (prepared.reason() != null) {
            deadLetter(prepared.record(), prepared.reason(), prepared.detail(), prepared.field(), prepared.error(), outcome);
            return;
        }
        for (ProducerRecord<byte[], byte[]> output : prepared.outputs()) {
            producer.send(output);
        }
        outcome.resolved(prepared.summary());
    }

    private void deadLetter(ConsumerRecord<byte[], byte[]> record, DeadLetter.Reason reason, String detail, String field,
                            String error, Outcome outcome) {
        producer.send(DeadLetter.of(config.deadLetterTopic(), record, reason, detail, field, error, resolution.resolverVersion(), clock.instant()));
        outcome.deadLettered(reason);
        LOG.warn("dead-lettered {}-{}@{} as {}/{}: {}", record.topic(), record.partition(), record.offset(), reason, detail, error);
    }

    private void commit(Map<TopicPartition, OffsetAndMetadata> offsets, Outcome outcome) {
        producer.commit(offsets, consumer.groupMetadata());
        metrics.committed(outcome.loads, outcome.deadLetters);
        vitals().progressed();
    }

    private void abortAndRewind(KafkaException cause) {
        LOG.warn("transaction aborted; redoing from the committed offsets: {}", cause.toString());
        producer.abortQuietly();
        metrics.aborted();
        rewind();
    }

    private void backOffAfter(boolean committed) {
        if (committed) {
            consecutiveFailures = 0;
            return;
        }
        consecutiveFailures++;
        pause(backoffMillis(consecutiveFailures, 100, MAX_BACKOFF));
    }


    @Override
    protected void end() {
        preparation.close();
        producer.close(Duration.ofSeconds(10));
    }

    /**
     * Runs inside poll on the loop thread. Only the look-ahead poll can find a transaction open: on revocation it
     * commits, with the generation that still owns the partitions, before they move to another worker; when the
     * partitions are already lost, the generation is gone and committing would fail, so it aborts.
     */
    private final class Rebalances implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            LOG.info("partitions revoked: {}", partitions);
            dropAhead(partitions);
            if (open == null || open.failure != null) {
                return;
            }
            try {
                commit(open.offsets, open.outcome);
                open = null;
            } catch (KafkaException e) {
                open.failure = e;
                abortInCallback();
            }
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            LOG.warn("partitions lost: {}", partitions);
            dropAhead(partitions);
            if (open != null && open.failure == null) {
                open.failure = new CommitFailedException("partitions " + partitions + " were lost with a transaction open; it is aborted");
                abortInCallback();
            }
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            LOG.info("partitions assigned: {}", partitions);
        }

        /** A fencing error here is not lost: the loop rethrows the open transaction's failure after the poll. */
        private void abortInCallback() {
            try {
                producer.abortQuietly();
            } catch (KafkaException fatal) {
                LOG.debug("abort in rebalance callback failed: {}", fatal.toString());
            }
        }
    }
}
