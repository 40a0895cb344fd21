package dev.placementaudit.worker.pipeline;

import org.apache.kafka.common.TopicPartition;

import java.util.List;

/** What the loop asks each time it has made its producer: abort what older incarnations left open; returns how many. */
interface LeftOpen {
    /** For a loop whose broker cannot be asked (Kafka's mock clients). */
    LeftOpen NONE = List::of;

    /** @return the partitions where a transaction was aborted */
    List<TopicPartition> abortLeftOpen();
}
