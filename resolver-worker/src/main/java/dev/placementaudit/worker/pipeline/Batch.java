package dev.placementaudit.worker.pipeline;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.Future;

/**
 * One poll's records, in poll order, and their preparation, started as soon as they were polled: one future per
 * record, or none when the batch is to be run one record at a time.
 */
record Batch(List<ConsumerRecord<byte[], byte[]>> records, List<Future<Prepared>> prepared) {
    static final Batch NONE = new Batch(List.of(), List.of());

    boolean isEmpty() {
        return records.isEmpty();
    }

    void cancel() {
        prepared.forEach(future -> future.cancel(false));
    }

    /** This batch less the records of the given partitions, whose preparation is cancelled. */
    Batch without(Collection<TopicPartition> partitions) {
        List<ConsumerRecord<byte[], byte[]>> keptRecords = new ArrayList<>(records.size());
        List<Future<Prepared>> keptPrepared = new ArrayList<>(prepared.size());
        for (int i = 0; i < records.size(); i++) {
            boolean leaving = partitions.contains(Offsets.partition(records.get(i)));
            if (!leaving) {
                keptRecords.add(records.get(i));
            }
            if (!prepared.isEmpty()) {
                if (leaving) {
                    prepared.get(i).cancel(false);
                } else {
                    keptPrepared.add(prepared.get(i));
                }
            }
        }
        return new Batch(keptRecords, keptPrepared);
    }
}
