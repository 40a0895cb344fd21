package dev.placementaudit.worker.pipeline;

import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.service.DeadLetter;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;

/** What the loop keeps of a transaction: the one whose outputs are sent and not yet committed, and what each will have done. */
final class Transactions {
    private Transactions() {
    }

    /** A transaction whose outputs are sent: the offsets it will commit, and the error if settling it failed. */
    static final class OpenTransaction {
        final Map<TopicPartition, OffsetAndMetadata> offsets;
        final Outcome outcome;
        KafkaException failure;

        OpenTransaction(Map<TopicPartition, OffsetAndMetadata> offsets, Outcome outcome) {
            this.offsets = offsets;
            this.outcome = outcome;
        }
    }

    /**
     * What one transaction will have done once it commits, and the records that prove, after an outage, that it
     * committed on every partition it wrote: per load, its first record and its last (a load's records share its
     * deployment's key, so its decisions are on one partition and its summary on one), or its dead letter.
     */
    static final class Outcome {
        final List<LoadResolved> loads = new ArrayList<>();
        final Map<String, Integer> deadLetters = new HashMap<>();
        final List<Future<RecordMetadata>> witnesses = new ArrayList<>();
        /** Per input partition, the offset of the transaction's first record there. */
        final Map<TopicPartition, Long> from;

        Outcome(Map<TopicPartition, Long> from) {
            this.from = from;
        }

        void sent(Future<RecordMetadata> witness) {
            witnesses.add(witness);
        }

        void resolved(LoadResolved summary) {
            loads.add(summary);
        }

        void deadLettered(DeadLetter.Reason reason) {
            deadLetters.merge(reason.name(), 1, Integer::sum);
        }
    }
}
