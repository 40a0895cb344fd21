package dev.placementaudit.worker.pipeline;

import dev.placementaudit.service.ConsumerVitals;
import dev.placementaudit.worker.pipeline.Transactions.OpenTransaction;
import dev.placementaudit.worker.pipeline.Transactions.Outcome;
import io.micrometer.core.instrument.Timer;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Supplier;

/**
 * The loop's transactional producers and how a batch commits: on the loop thread with one producer, or, with two
 * ({@code worker.commit.overlap}, ADR 19), on a committing thread while the loop sends the next batch on the other
 * producer. A batch's records are all written on the broker (a flush) before the next batch sends, so every partition
 * keeps its records in input order, and a batch commits only after the one before it did.
 */
final class Commits {
    private static final Logger LOG = LoggerFactory.getLogger(Commits.class);

    private final List<TransactionalProducer> producers = new ArrayList<>();
    private final WorkerMetrics metrics;
    private final ConsumerVitals vitals;
    /** Commits a batch handed over by the loop while the loop sends the next one; null with one producer. */
    private ExecutorService committer;
    /** Which producer the next transaction is on. */
    private int turn;
    /** The previous batch's commit, running on the committing thread; only ever touched on the loop thread. */
    private Future<?> committing;
    /** Fenced, and nothing committed since the producers were made anew: a second fencing now means another instance. */
    private volatile boolean fencedSinceCommit;

    Commits(List<Supplier<Producer<byte[], byte[]>>> factories, WorkerMetrics metrics, ConsumerVitals vitals) {
        if (factories.isEmpty() || factories.size() > 2) {
            throw new IllegalArgumentException("one or two producers");
        }
        factories.forEach(factory -> producers.add(new TransactionalProducer(factory)));
        this.metrics = metrics;
        this.vitals = vitals;
    }

    /** Makes the producers; a second one this principal has no rights for leaves one, committing a batch at a time. */
    void start(String threadName) {
        producers.get(0).make();
        if (producers.size() == 2) {
            try {
                producers.get(1).make();
            } catch (AuthorizationException e) {
                // An upgrade must not stop a worker whose rights name its one transactional id only.
                LOG.warn("the second transactional producer cannot be made ({}): committing one batch at a time, as before; grant this "
                        + "principal Write on the second transactional id (or a prefix of both), or set worker.commit.overlap=false", e.getMessage());
                producers.get(1).close(Duration.ZERO);
                producers.remove(1);
            }
        }
        if (producers.size() == 2) {
            committer = Executors.newSingleThreadExecutor(task -> {
                Thread thread = new Thread(task, threadName + "-committer");
                thread.setDaemon(true);
                return thread;
            });
        }
    }

    /** The producer of the next transaction, or of the one open. */
    TransactionalProducer producer() {
        return producers.get(turn);
    }

    boolean overlapping() {
        return committer != null;
    }

    /**
     * Every producer closed and made anew with its transactional id: {@code initTransactions} bumps the epoch, fencing
     * what the old incarnation still had in flight, and settles what it left open (aborted, or its commit completed).
     *
     * @throws ProducerFencedException when fenced again before anything committed since the last time: another live
     *                                 instance owns the transactional id
     */
    void remake(KafkaException cause) {
        if (cause instanceof ProducerFencedException fenced) {
            if (fencedSinceCommit) {
                throw fenced;
            }
            fencedSinceCommit = true;
        }
        turn = 0;
        for (TransactionalProducer producer : producers) {
            producer.make();
        }
    }

    /** Commits the open transaction on this thread (one producer, or a record isolated or settled in a rebalance). */
    void commit(Map<TopicPartition, OffsetAndMetadata> offsets, ConsumerGroupMetadata group, Outcome outcome) {
        commit(producer(), offsets, group, outcome);
    }

    private void commit(TransactionalProducer producer, Map<TopicPartition, OffsetAndMetadata> offsets, ConsumerGroupMetadata group,
                        Outcome outcome) {
        producer.commit(offsets, group);
        fencedSinceCommit = false;
        metrics.committed(outcome.loads, outcome.deadLetters);
        vitals.progressed();
    }

    /**
     * With two producers: waits for the previous batch's commit, flushes this batch's records, and hands its commit to the
     * committing thread; the next batch goes on the other producer. What runs beside the next batch's sends is the commit
     * itself: the offsets and the end of the transaction.
     *
     * @throws KafkaException the previous batch's commit failure: this batch is then aborted and both are redone
     */
    void handOver(OpenTransaction transaction, ConsumerGroupMetadata group, Timer.Sample sample) {
        KafkaException previous = awaitCommit();
        if (previous != null) {
            throw previous;
        }
        TransactionalProducer producer = producer();
        producer.flush();
        committing = committer.submit(() -> commitHandedOver(producer, transaction, group, sample));
        turn = (turn + 1) % producers.size();
    }

    /**
     * On the committing thread. A commit that fails for a reason the producer survives is aborted here, so the producer
     * is free for its next turn; the loop learns of the failure when it waits for this commit, and redoes the batch.
     */
    private void commitHandedOver(TransactionalProducer producer, OpenTransaction transaction, ConsumerGroupMetadata group, Timer.Sample sample) {
        try {
            commit(producer, transaction.offsets, group, transaction.outcome);
        } catch (KafkaException e) {
            if (!passesThrough(e)) {
                producer.abortQuietly();
                metrics.aborted();
            }
            throw e;
        }
        sample.stop(metrics.batchTimer());
    }

    /**
     * Waits for the commit handed to the committing thread, if any, and returns its failure, or null when it committed
     * or there was none. Bounded by the producer's own timeouts, as a commit on the loop thread is.
     */
    KafkaException awaitCommit() {
        if (committing == null) {
            return null;
        }
        Future<?> done = committing;
        committing = null;
        try {
            done.get();
            return null;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof KafkaException failure) {
                return failure;
            }
            return new KafkaException("committing a batch failed", e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new InterruptException(e);
        }
    }

    /**
     * The errors that no abort answers, let through by every transaction's catch: the producers are made anew, or the
     * loop stops.
     */
    static boolean passesThrough(KafkaException e) {
        return e instanceof ProducerFencedException || e instanceof InvalidProducerEpochException || e instanceof OutOfOrderSequenceException
                || e instanceof AuthorizationException || e instanceof FencedInstanceIdException || e instanceof TransactionalProducer.Unusable;
    }

    /** The commit in flight ended (its failure logged: the next reader redoes its batch), every producer closed. */
    void close() {
        KafkaException last = awaitCommit();
        if (last != null) {
            LOG.warn("the last batch's commit failed ({}); its records are redone from the committed offsets by whoever reads them next",
                    last.toString());
        }
        for (TransactionalProducer producer : producers) {
            producer.close(Duration.ofSeconds(10));
        }
        if (committer != null) {
            committer.shutdownNow();
        }
    }
}
