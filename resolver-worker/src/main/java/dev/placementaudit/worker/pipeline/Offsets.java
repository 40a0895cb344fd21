package dev.placementaudit.worker.pipeline;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

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

    /** Per partition, the offset of its first record among these. */
    static Map<TopicPartition, Long> firstOffsets(List<ConsumerRecord<byte[], byte[]>> records) {
        Map<TopicPartition, Long> first = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> record : records) {
            first.putIfAbsent(partition(record), record.offset());
        }
        return first;
    }

    static TopicPartition partition(ConsumerRecord<?, ?> record) {
        return new TopicPartition(record.topic(), record.partition());
    }

    /**
     * Seeks every assigned partition back to its committed offset: what an aborted transaction did is undone; or, where
     * {@code ahead} (given the group's committed offsets of the assigned partitions) says so, to the offset it names:
     * the offsets of a transaction the caller has proven committed with its outputs, which an outage lost on the
     * offsets partition only (see {@link HangingTransactions}); going back there would resolve its loads a second time.
     *
     * @return the partitions sought to an offset of {@code ahead}'s, with that offset
     */
    static Map<TopicPartition, OffsetAndMetadata> seekToCommitted(Consumer<?, ?> consumer,
            Function<Map<TopicPartition, OffsetAndMetadata>, Map<TopicPartition, OffsetAndMetadata>> ahead) {
        Set<TopicPartition> assigned = consumer.assignment();
        if (assigned.isEmpty()) {
            return Map.of();
        }
        Map<TopicPartition, OffsetAndMetadata> committed = new HashMap<>(consumer.committed(assigned));
        assigned.forEach(partition -> committed.putIfAbsent(partition, null));
        Map<TopicPartition, OffsetAndMetadata> putBack = new HashMap<>();
        Map<TopicPartition, OffsetAndMetadata> proven = ahead.apply(Collections.unmodifiableMap(committed));
        for (TopicPartition partition : assigned) {
            OffsetAndMetadata offset = committed.get(partition);
            OffsetAndMetadata here = proven.get(partition);
            if (here != null && (offset == null || offset.offset() < here.offset())) {
                putBack.put(partition, here);
                offset = here;
            }
            if (offset == null) {
                consumer.seekToBeginning(List.of(partition));
            } else {
                consumer.seek(partition, offset.offset());
            }
        }
        return putBack;
    }
}
