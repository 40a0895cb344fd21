package dev.placementaudit.worker.pipeline;

import org.apache.kafka.common.TopicPartition;

import java.util.Map;

/**
 * Whether records this worker sent in a transaction, one per partition it wrote, are visible to read_committed readers:
 * what proves that the transaction committed everywhere, after an outage left its part on the group's offsets
 * partition open. Seeing its
 * commit succeed does not prove it: a broker killed for 3 s (Kafka 4.4, {@code WorkerBrokerOutageTest}) brought back
 * a transaction whose commit the worker had seen succeed with no marker anywhere, which the look for transactions
 * left open then aborted whole, and another committed on one output partition and aborted on another.
 */
interface CommitWitness {
    /** For a loop whose broker cannot be read (Kafka's mock clients): nothing is proven, every batch is redone. */
    CommitWitness NONE = records -> false;

    /**
     * @param records per partition, the offset of a record
     * @return true when a read_committed reader reads every one of them; false when one was aborted, or when that cannot
     * be known in time (the caller then redoes: a load twice rather than none)
     */
    boolean visible(Map<TopicPartition, Long> records);
}
