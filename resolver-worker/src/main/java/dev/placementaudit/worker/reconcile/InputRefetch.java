package dev.placementaudit.worker.reconcile;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** The input read again at the few offsets found overdue, read_committed, on a consumer with no group. */
final class InputRefetch {
    private final String inputTopic;
    private final Consumer<byte[], byte[]> refetch;

    InputRefetch(String inputTopic, Consumer<byte[], byte[]> refetch) {
        this.inputTopic = inputTopic;
        this.refetch = refetch;
    }

    /** The records at these offsets of the input, read again read_committed; one that is not there (aborted) is left out. */
    List<ConsumerRecord<byte[], byte[]>> read(List<Completeness.Load> loads) {
        List<ConsumerRecord<byte[], byte[]>> found = new ArrayList<>();
        for (Completeness.Load load : loads) {
            TopicPartition partition = new TopicPartition(inputTopic, load.partition());
            refetch.assign(List.of(partition));
            refetch.seek(partition, load.offset());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            boolean done = false;
            while (!done && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> record : refetch.poll(Duration.ofMillis(500))) {
                    if (record.offset() == load.offset()) {
                        found.add(record);
                    }
                    done |= record.offset() >= load.offset();
                }
                done |= refetch.position(partition) > load.offset();
            }
            if (!done) {
                throw new KafkaException("could not read " + partition + "@" + load.offset() + " again within 30 s");
            }
        }
        return found;
    }

    void close() {
        refetch.close(Duration.ofSeconds(5));
    }
}
