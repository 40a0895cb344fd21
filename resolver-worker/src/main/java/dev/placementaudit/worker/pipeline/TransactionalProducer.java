package dev.placementaudit.worker.pipeline;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.function.Supplier;

/**
 * One of the loop's transactional producers: one transaction at a time, and made anew, with the same transactional id,
 * when an outage has left it in a state no call of it can leave. Used by one thread at a time: the loop's (rebalance
 * callbacks run there too), or the committing thread while it commits a transaction the loop handed it, and the loop
 * waits for that commit to end before it touches this producer again.
 *
 * <p>A call of a transaction that times out on the client makes the producer {@link Unusable}, never aborted by the
 * client: a timed-out request may still reach the broker, or already have, and a broker outage showed (with Kafka 4.4's
 * transactions version 2) that a client-side abort after a timed-out {@code sendOffsetsToTransaction} can leave the
 * transaction's records committed, or visible without a marker, while its consumer offsets are not, so the batch was
 * redone and its loads resolved twice. Only a new incarnation's {@code initTransactions} settles such a transaction on
 * the broker: it bumps the epoch, which fences any request still in flight, and aborts the transaction on every
 * partition the coordinator knows it touched (or completes its commit, when that had begun).
 */
final class TransactionalProducer {
    private static final Logger LOG = LoggerFactory.getLogger(TransactionalProducer.class);

    private final Supplier<Producer<byte[], byte[]>> factory;
    private Producer<byte[], byte[]> producer;
    /** Whether a transaction is begun and not yet committed or aborted: only that one may be aborted. */
    private boolean inTransaction;
    /** A call timed out: what the open transaction holds is unknown to the client, and only a new incarnation settles it. */
    private KafkaException unusable;

    TransactionalProducer(Supplier<Producer<byte[], byte[]>> factory) {
        this.factory = factory;
    }

    /**
     * Closes the producer there is, if any, and makes a new one: its {@code initTransactions} bumps the epoch and aborts
     * whatever the old one left open. Blocks up to the client's {@code max.block.ms} when no broker answers.
     */
    void make() {
        close(Duration.ZERO);
        unusable = null;
        producer = factory.get();
        producer.initTransactions();
    }

    void begin() {
        producer.beginTransaction();
        inTransaction = true;
    }

    /** @throws Unusable when the record could not be handed to the client in time (no metadata, a full buffer) */
    Future<RecordMetadata> send(ProducerRecord<byte[], byte[]> record) {
        try {
            return producer.send(record);
        } catch (KafkaException e) {
            throw unusableAfterTimeout(e);
        }
    }

    /**
     * Commits the transaction with the consumer's offsets and group metadata, so a zombie of an older generation is fenced.
     *
     * @throws Unusable when a step of it timed out (the outcome is then the broker's to settle, not the client's)
     */
    void commit(Map<TopicPartition, OffsetAndMetadata> offsets, ConsumerGroupMetadata group) {
        try {
            producer.sendOffsetsToTransaction(offsets, group);
            producer.commitTransaction();
        } catch (KafkaException e) {
            throw unusableAfterTimeout(e);
        }
        inTransaction = false;
    }

    /**
     * Waits until every record sent in the open transaction is written on the broker, so that what another producer
     * sends afterwards lands after them on every partition.
     *
     * @throws Unusable when it timed out
     */
    void flush() {
        try {
            producer.flush();
        } catch (KafkaException e) {
            throw unusableAfterTimeout(e);
        }
    }

    /** A timeout makes the producer unusable for good (see the class comment); anything else is the caller's to handle. */
    private KafkaException unusableAfterTimeout(KafkaException e) {
        if (Failures.isTimeout(e)) {
            unusable = new Unusable(e);
            return unusable;
        }
        return e;
    }

    /**
     * Aborts the open transaction after a failure. When a call of the transaction timed out, or the abort itself fails
     * (the producer is in a fatal state), the producer is unusable: {@link Unusable} makes the loop make it anew, and
     * the new incarnation's {@code initTransactions} aborts the transaction on the broker.
     */
    void abortQuietly() {
        if (unusable != null) {
            throw unusable;
        }
        if (!inTransaction) {
            return;
        }
        try {
            producer.abortTransaction();
            inTransaction = false;
        } catch (ProducerFencedException | InvalidProducerEpochException e) {
            throw e;
        } catch (KafkaException | IllegalStateException e) {
            unusable = new Unusable(e);
            throw unusable;
        }
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
