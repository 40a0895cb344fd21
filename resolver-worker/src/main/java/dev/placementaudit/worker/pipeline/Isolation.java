package dev.placementaudit.worker.pipeline;

import dev.placementaudit.service.DeadLetter;
import dev.placementaudit.worker.pipeline.Transactions.Outcome;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.Map;

/**
 * After a transaction failed for a reason that is not a rebalance, the next batch runs one record per transaction, so
 * that a record whose outputs cannot be produced (too large for the broker, say) is dead-lettered on its own instead
 * of stalling its partition, and every other record goes through.
 */
final class Isolation {
    private static final Logger LOG = LoggerFactory.getLogger(Isolation.class);

    private final ResolverLoop loop;
    private final Commits commits;
    private final Outputs outputs;
    private final RecordPreparation preparation;
    private final WorkerMetrics metrics;

    Isolation(ResolverLoop loop, Commits commits, Outputs outputs, RecordPreparation preparation, WorkerMetrics metrics) {
        this.loop = loop;
        this.commits = commits;
        this.outputs = outputs;
        this.preparation = preparation;
        this.metrics = metrics;
    }

    /** One transaction per record; returns whether all went through (the record that cannot, dead-lettered alone). */
    boolean oneByOne(List<ConsumerRecord<byte[], byte[]>> records) {
        // Nothing is in flight: isolation follows a rewind, which waited for the commit in flight.
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
                commits.producer().begin();
                outputs.deadLetter(record, DeadLetter.Reason.PRODUCE_FAILED, Failures.rootName(failed), null, Failures.causeChain(failed), outcome);
                commits.commit(after(record), loop.consumer().groupMetadata(), outcome);
            } catch (KafkaException e) {
                if (Commits.passesThrough(e)) {
                    throw e;
                }
                loop.abortAndRewind(e);
                return false;
            }
        }
        return true;
    }

    private KafkaException tryAlone(ConsumerRecord<byte[], byte[]> record) {
        Outcome outcome = new Outcome();
        try {
            Prepared prepared = preparation.prepare(record);
            commits.producer().begin();
            outputs.send(prepared, outcome);
            commits.commit(after(record), loop.consumer().groupMetadata(), outcome);
            return null;
        } catch (KafkaException e) {
            if (Commits.passesThrough(e)) {
                throw e;
            }
            commits.producer().abortQuietly();
            metrics.aborted();
            return e;
        }
    }

    private static Map<TopicPartition, OffsetAndMetadata> after(ConsumerRecord<byte[], byte[]> record) {
        return Map.of(Offsets.partition(record), new OffsetAndMetadata(record.offset() + 1));
    }
}
