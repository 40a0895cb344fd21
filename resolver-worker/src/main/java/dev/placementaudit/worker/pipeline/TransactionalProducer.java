package dev.placementaudit.worker.pipeline;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The loop's transactional producer: one transaction at a time, and made anew, with the same transactional id, when an
 * outage has left it in a state no call of it can leave. Only ever used on the loop's thread (rebalance callbacks run
 * there too).
 */
final class TransactionalProducer {
    private static final Logger LOG = LoggerFactory.getLogger(TransactionalProducer.class);

    private final Supplier<Producer<byte[], byte[]>> factory;
    private Producer<byte[], byte[]> producer;
    /** Whether a transaction is begun and not yet committed or aborted: only that one may be aborted. */
    private boolean inTransaction;
    /** Fenced, and nothing committed since the producer was made anew: a second fencing now means another instance. */
    private boolean fencedSinceCommit;

    TransactionalProducer(Supplier<Producer<byte[], byte[]>> factory) {
        this.factory = factory;
    }

    /**
     * Closes the producer there is, if any, and makes a new one: its {@code initTransactions} bumps the epoch and aborts
     * whatever the old one left open. Blocks up to the client's {@code max.block.ms} when no broker answers.
     */
    void make() {
        close(Duration.ZERO);
        producer = factory.get();
        producer.initTransactions();
    }

    void begin() {
        producer.beginTransaction();
        inTransaction = true;
    }

    void send(ProducerRecord<byte[], byte[]> record) {
        producer.send(record);
    }

    /** Commits the transaction with the consumer's offsets and group metadata, so a zombie of an older generation is fenced. */
    void commit(Map<TopicPartition, OffsetAndMetadata> offsets, ConsumerGroupMetadata group) {
        producer.sendOffsetsToTransaction(offsets, group);
        producer.commitTransaction();
        inTransaction = false;
        fencedSinceCommit = false;
    }

    /**
     * Aborts the open transaction after a failure. When even that fails (the producer is in a fatal state, or a commit
     * timed out and may only be retried), the producer is unusable: {@link Unusable} makes the loop make it anew.
     */
    void abortQuietly() {
        if (!inTransaction) {
            return;
        }
        try {
            producer.abortTransaction();
            inTransaction = false;
        } catch (ProducerFencedException | InvalidProducerEpochException e) {
            throw e;
        } catch (KafkaException | IllegalStateException e) {
            throw new Unusable(e);
        }
    }

    /**
     * Notes that the producer was fenced, which the loop recovers from once: the coordinator bumps the epoch of a
     * transaction that outlived its timeout, too.
     *
     * @throws ProducerFencedException when fenced again before anything committed since: another live instance owns the id
     */
    void fenced(ProducerFencedException e) {
        if (fencedSinceCommit) {
            throw e;
        }
        fencedSinceCommit = true;
    }

    void close(Duration timeout) {
        if (producer == null) {
            return;
        }
        try {
            producer.close(timeout);
        } catch (RuntimeException e) {
            LOG.warn("closing the producer failed: {}", e.toString());
        }
        producer = null;
        inTransaction = false;
    }

    /** The producer is in a state no call of it can leave (see {@link #abortQuietly}); the loop makes it anew. */
    static final class Unusable extends KafkaException {
        Unusable(Throwable cause) {
            super("the transactional producer is unusable: " + cause, cause);
        }
    }
}
