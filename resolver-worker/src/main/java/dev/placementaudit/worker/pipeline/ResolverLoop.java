package dev.placementaudit.worker.pipeline;

import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.service.ConsumerLoop;
import dev.placementaudit.service.ConsumerVitals;
import dev.placementaudit.worker.WorkerConfig;
import dev.placementaudit.worker.pipeline.Transactions.OpenTransaction;
import dev.placementaudit.worker.pipeline.Transactions.Outcome;
import dev.placementaudit.worker.pipeline.WorkerMetrics.Phase;
import io.micrometer.core.instrument.Timer;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
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
import java.util.Set;
import java.util.concurrent.Future;
import java.util.function.Supplier;

/**
 * consume → resolve → produce, exactly once, by Kafka's standard loop: each poll's records become one transaction
 * holding every AllocationDecided, every LoadResolved, every dead letter and the consumer offsets
 * ({@code sendOffsetsToTransaction} with the group's metadata, so a zombie of an older generation is fenced). On a
 * failed transaction it aborts and rewinds to the committed offsets; on a producer that cannot go on it makes the
 * producer anew ({@code initTransactions} fences the old epoch and settles what it left open) and rewinds. What Kafka
 * might still lose is found end to end by the {@link dev.placementaudit.worker.reconcile.Reconciler}, not here
 * (docs/adr/0020-completeness-by-reconciliation.md).
 *
 * <p>Its phases, each in a file of its own: polling and preparing ahead (this class, ADR 7's look-ahead), sending
 * ({@link #processBatch}), committing and the overlap ({@link Commits}, ADR 19), rebalances ({@link Rebalances}),
 * isolating a poison record ({@link Isolation}), and recovery ({@link #recover}); where it is, {@link LoopState}.
 */
public final class ResolverLoop extends ConsumerLoop {
    private static final Logger LOG = LoggerFactory.getLogger(ResolverLoop.class);
    private static final Duration MAX_BACKOFF = Duration.ofSeconds(5);

    private final WorkerConfig config;
    private final Commits commits;
    private final WorkerMetrics metrics;
    private final RecordPreparation preparation;
    private final Outputs outputs;
    private final Rebalances rebalances;
    private final Isolation isolation;
    private volatile LoopState state = LoopState.STARTING;
    /** Why the producers are being made anew, while they are; null otherwise (shown by {@code /health}). */
    private volatile String recovering;
    /** A commit that failed while a rebalance waited for it in the regular poll, handled once that poll returns. */
    private KafkaException commitFailure;
    private boolean isolateNextBatch;
    private int consecutiveFailures;
    /** The batch whose outputs are sent but not yet committed; only ever touched on the loop thread. */
    private OpenTransaction open;
    /** Polled, being prepared, nothing sent yet, oldest first; only ever touched on the loop thread. */
    private final Deque<Batch> ahead = new ArrayDeque<>();
    /** A look-ahead poll's failure, raised once the open transaction has committed. */
    private KafkaException pollFailure;

    /** A loop with one transactional producer: each batch commits before the next one's outputs are sent. */
    public ResolverLoop(WorkerConfig config, Consumer<byte[], byte[]> consumer, Supplier<Producer<byte[], byte[]>> producers,
                        WorkerMetrics metrics, LoadResolution resolution, Clock clock) {
        this(config, consumer, List.of(producers), metrics, resolution, clock);
    }

    /** @param producers one supplier per transactional id: with two, a batch commits on one while the next batch is sent on the other */
    ResolverLoop(WorkerConfig config, Consumer<byte[], byte[]> consumer, List<Supplier<Producer<byte[], byte[]>>> producers,
                 WorkerMetrics metrics, LoadResolution resolution, Clock clock) {
        super("resolver loop", consumer, new ConsumerVitals(config.healthBound(), clock), LOG);
        this.config = config;
        this.commits = new Commits(producers, metrics, vitals());
        this.rebalances = new Rebalances(this, commits);
        this.metrics = metrics;
        this.preparation = new RecordPreparation(config, resolution, clock);
        this.outputs = new Outputs(config, commits, resolution, clock);
        this.isolation = new Isolation(this, commits, outputs, preparation, metrics);
    }

    /** The input partitions this loop owns now: the reconciler looks after these only. */
    public Set<Integer> owned() {
        return rebalances.owned();
    }

    /** Why the producers are being made anew right now, or null: the loop is recovering from a broker outage. */
    public String recovering() {
        return recovering;
    }

    @Override
    protected void begin() {
        commits.start(Thread.currentThread().getName());
        consumer.subscribe(List.of(config.inputTopic()), rebalances);
        moveTo(LoopState.POLLING);
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
        state = LoopState.STOPPED;
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
        moveTo(LoopState.POLLING);
        Batch batch = ahead.isEmpty() ? poll(config.pollTimeout(), !isolateNextBatch) : ahead.removeFirst();
        KafkaException commitFailed = commitFailure;
        commitFailure = null;
        if (commitFailed == null && batch.isEmpty()) {
            // Nothing to send meanwhile: the previous batch's commit is waited for, so that its failure is not left
            // unnoticed until more input comes.
            commitFailed = commits.awaitCommit();
        }
        if (commitFailed != null) {
            batch.cancel();
            afterFailedCommit(commitFailed);
            return;
        }
        if (batch.isEmpty()) {
            return;
        }
        boolean committed;
        if (isolateNextBatch) {
            moveTo(LoopState.ISOLATING);
            committed = isolation.oneByOne(batch.records());
        } else {
            committed = processBatch(batch);
        }
        isolateNextBatch = !committed && isolateNextBatch;
        backOffAfter(committed);
        if (pollFailure != null) {
            KafkaException failed = pollFailure;
            pollFailure = null;
            throw failed;
        }
    }

    /**
     * One transaction for the batch. Returns whether it committed, or, with two producers, whether it was handed to the
     * committing thread after the previous batch's commit succeeded; when it was aborted instead, the batches ahead
     * are dropped and the consumer is rewound to the committed offsets.
     */
    private boolean processBatch(Batch batch) {
        moveTo(LoopState.SENDING);
        Timer.Sample sample = Timer.start();
        try {
            commits.producer().begin();
            open = new OpenTransaction(Offsets.nextOffsets(batch.records()), new Outcome());
            long resolving = 0;
            long sending = 0;
            for (Future<Prepared> one : batch.prepared()) {
                long asked = System.nanoTime();
                Prepared prepared = RecordPreparation.await(one);
                long ready = System.nanoTime();
                outputs.send(prepared, open.outcome);
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
                moveTo(LoopState.COMMITTING);
                if (commits.overlapping()) {
                    commits.handOver(open, consumer.groupMetadata(), sample);
                } else {
                    commits.commit(open.offsets, consumer.groupMetadata(), open.outcome);
                    sample.stop(metrics.batchTimer());
                }
                open = null;
            }
            metrics.phase(Phase.COMMITTING, System.nanoTime() - committing);
            return true;
        } catch (KafkaException e) {
            if (Commits.passesThrough(e)) {
                throw e;
            }
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
        if (commitFailure != null) {
            KafkaException failed = commitFailure;
            commitFailure = null;
            throw failed;
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

    /** The transaction whose outputs are sent and not yet committed, or null: what a rebalance settles. */
    OpenTransaction open() {
        return open;
    }

    /** A rebalance committed the open transaction. */
    void openCommitted() {
        open = null;
    }

    /** The commit in flight failed while a rebalance waited for it, with nothing open: handled once the poll returns. */
    void commitFailedMeanwhile(KafkaException failure) {
        commitFailure = failure;
    }

    /** After a rebalance: records of partitions this worker no longer owns leave the batches ahead, unsent. */
    void dropAhead(Collection<TopicPartition> leaving) {
        int before = ahead.size();
        for (int i = 0; i < before; i++) {
            Batch kept = ahead.removeFirst().without(leaving);
            if (!kept.isEmpty()) {
                ahead.addLast(kept);
            }
        }
    }

    /**
     * The previous batch's commit failed after the loop had gone on (nothing of a later batch is open): as for a failed
     * commit on the loop thread, every batch ahead is dropped and the consumer rewound, or, when the producer cannot go
     * on, it is made anew.
     */
    private void afterFailedCommit(KafkaException failed) {
        if (Commits.passesThrough(failed)) {
            throw failed;
        }
        LOG.warn("the previous batch's commit failed; redoing from the committed offsets: {}", failed.toString());
        rewind();
        isolateNextBatch = !Failures.isGroupChange(failed);
        backOffAfter(false);
    }

    void abortAndRewind(KafkaException cause) {
        LOG.warn("transaction aborted; redoing from the committed offsets: {}", cause.toString());
        commits.producer().abortQuietly();
        metrics.aborted();
        rewind();
    }

    /** Drops every batch ahead, unsent, and seeks back to the committed offsets once the commit in flight has ended. */
    private void rewind() {
        ahead.forEach(Batch::cancel);
        ahead.clear();
        commits.awaitCommit();
        Offsets.seekToCommitted(consumer);
    }

    /**
     * The producer cannot go on: every producer is closed and made anew with its transactional id (retried with back-off
     * for as long as the broker is away), every batch ahead is dropped, and the consumer, still a member of its group, is
     * rewound to the committed offsets: what was sent and not committed is redone, with the same decision ids.
     */
    private void recover(KafkaException cause) {
        moveTo(LoopState.RECOVERING);
        recovering = cause.toString();
        LOG.warn("the transactional producer cannot go on ({}); making it anew and redoing from the committed offsets", Failures.rootCause(cause));
        metrics.producerRecreated();
        open = null;
        ahead.forEach(Batch::cancel);
        ahead.clear();
        isolateNextBatch = false;
        // Only once the commit in flight has ended are the committed offsets those to redo from.
        commits.awaitCommit();
        commitFailure = null;
        int attempt = 0;
        while (running()) {
            try {
                commits.remake(cause);
                Offsets.seekToCommitted(consumer);
                LOG.info("transactional producer made anew after {} attempt(s); resuming from the committed offsets", attempt + 1);
                recovering = null;
                moveTo(LoopState.POLLING);
                return;
            } catch (WakeupException | ProducerFencedException e) {
                throw e;
            } catch (KafkaException e) {
                attempt++;
                LOG.warn("making the transactional producer anew failed (attempt {}): {}; retrying", attempt, e.toString());
                pause(backoffMillis(attempt, 100, MAX_BACKOFF));
            }
        }
    }

    private void backOffAfter(boolean committed) {
        if (committed) {
            consecutiveFailures = 0;
            return;
        }
        consecutiveFailures++;
        pause(backoffMillis(consecutiveFailures, 100, MAX_BACKOFF));
    }

    void moveTo(LoopState next) {
        if (!state.canMoveTo(next)) {
            throw new IllegalStateException("the resolver loop cannot go from " + state + " to " + next);
        }
        state = next;
    }

    Consumer<byte[], byte[]> consumer() {
        return consumer;
    }

    @Override
    protected void end() {
        state = LoopState.STOPPED;
        commits.close();
        preparation.close();
    }
}
