package dev.placementaudit.worker.pipeline;

import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.service.DeadLetter;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;

import java.util.List;

/** One record's outputs, or why it goes to the dead letters instead. */
record Prepared(ConsumerRecord<byte[], byte[]> record, List<ProducerRecord<byte[], byte[]>> outputs, LoadResolved summary,
                        DeadLetter.Reason reason, String detail, String field, String error) {
    static Prepared deadLetter(ConsumerRecord<byte[], byte[]> record, DeadLetter.Reason reason, String detail, String field, String error) {
        return new Prepared(record, List.of(), null, reason, detail, field, error);
    }
}
