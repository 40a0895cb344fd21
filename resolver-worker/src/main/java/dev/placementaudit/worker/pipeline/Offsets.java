package dev.placementaudit.worker.pipeline;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Where records stand, and the offsets a transaction commits after them. */
final class Offsets {
    private Offsets() {
    }

    static Map<TopicPartition, OffsetAndMetadata> nextOffsets(List<ConsumerRecord<byte[], byte[]>> records) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> record : records) {
            // A partition's records come in offset order: the last one seen is the highest.
            offsets.put(partition(record), new OffsetAndMetadata(record.offset() + 1));
        }
        return offsets;
    }

    static TopicPartition partition(ConsumerRecord<?, ?> record) {
        return new TopicPartition(record.topic(), record.partition());
    }

    /**
     * Seeks every assigned partition back to its committed offset: what an aborted transaction did is undone. Never
     * behind {@code committedHere}, the offsets of a transaction the caller knows committed with its outputs: the group's
     * offsets can fall behind those when an outage lost that transaction's marker on the offsets partition only, and
     * that part of it was then aborted as left open (see {@link HangingTransactions}); going back there would resolve
     * its loads a second time.
     *
     * @return the partitions whose committed offset was behind what this worker saw commit, with that offset
     */
    static Map<TopicPartition, OffsetAndMetadata> seekToCommitted(Consumer<?, ?> consumer, Map<TopicPartition, OffsetAndMetadata> committedHere) {
        Set<TopicPartition> assigned = consumer.assignment();
        if (assigned.isEmpty()) {
            return Map.of();
        }
        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(assigned);
        Map<TopicPartition, OffsetAndMetadata> behind = new HashMap<>();
        for (TopicPartition partition : assigned) {
            OffsetAndMetadata offset = committed.get(partition);
            OffsetAndMetadata here = committedHere.get(partition);
            if (here != null && (offset == null || offset.offset() < here.offset())) {
                behind.put(partition, here);
                offset = here;
            }
            if (offset == null) {
                consumer.seekToBeginning(List.of(partition));
            } else {
                consumer.seek(partition, offset.offset());
            }
        }
        return behind;
    }
}
