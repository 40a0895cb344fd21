package dev.placementaudit.worker.pipeline;

import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.service.DeadLetter;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

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

    /** What one transaction will have done once it commits: the loads it resolved and the dead letters by reason, for the metrics. */
    static final class Outcome {
        final List<LoadResolved> loads = new ArrayList<>();
        final Map<String, Integer> deadLetters = new HashMap<>();

        void resolved(LoadResolved summary) {
            loads.add(summary);
        }

        void deadLettered(DeadLetter.Reason reason) {
            deadLetters.merge(reason.name(), 1, Integer::sum);
        }
    }
}
