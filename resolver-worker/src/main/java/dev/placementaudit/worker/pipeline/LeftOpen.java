package dev.placementaudit.worker.pipeline;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.internals.Topic;

import java.util.List;

/** What the loop asks each time it has made its producer: abort what older incarnations left open; returns what it aborted. */
interface LeftOpen {
    /** For a loop whose broker cannot be asked (Kafka's mock clients). */
    LeftOpen NONE = List::of;

    /** @return each transaction aborted: the partition, and the offset of its first record there */
    List<Aborted> abortLeftOpen();

    /** A transaction left open and aborted on {@code partition}, where its records began at {@code startOffset}. */
    record Aborted(TopicPartition partition, long startOffset) {
        /** Its part on the group's offsets partition, not on an output. */
        boolean onOffsetsPartition() {
            return partition.topic().equals(Topic.GROUP_METADATA_TOPIC_NAME);
        }
    }
}
