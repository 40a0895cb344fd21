package dev.placementaudit.store.ingest;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.service.DeadLetter;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/** One consumed record, decoded: a decision, a load summary, an observation, or a reject bound for the dead letters. */
public sealed interface Decoded {
    ConsumerRecord<byte[], byte[]> record();

    /**
     * @param checkedPlan the plan whose tensor this decision was found, value by value, to carry as it was decoded
     *                    (the plan's values were at hand then); null when it was not checked
     */
    record Decision(ConsumerRecord<byte[], byte[]> record, AllocationDecided event, String checkedPlan) implements Decoded {
        public Decision(ConsumerRecord<byte[], byte[]> record, AllocationDecided event) {
            this(record, event, null);
        }
    }

    record Summary(ConsumerRecord<byte[], byte[]> record, LoadResolved event) implements Decoded {
    }

    /** What a runtime measured it held after a load (docs/observations.md). */
    record Observation(ConsumerRecord<byte[], byte[]> record, LoadObserved event) implements Decoded {
    }

    /** @param loadId the load the record belongs to, when it decoded far enough to say; null otherwise */
    record Reject(ConsumerRecord<byte[], byte[]> record, DeadLetter.Reason reason, String detail, String error, String loadId) implements Decoded {
        public Reject(ConsumerRecord<byte[], byte[]> record, DeadLetter.Reason reason, String detail, String error) {
            this(record, reason, detail, error, null);
        }
    }
}
