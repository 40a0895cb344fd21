package dev.placementaudit.worker.reconcile;

import org.apache.kafka.common.TopicPartition;

import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A transaction left hanging on a partition: its last stable offset (where read_committed readers stop) short of the
 * high watermark and not moving for longer than any live transaction may stay open. Every read_committed reader of that
 * partition waits behind it, the store included, until an operator aborts it ({@code kafka-transactions.sh}); the
 * worker does not, since an abort cannot tell a transaction that committed elsewhere from one that did not.
 */
final class HangingWatch {
    private record Seen(long stable, Instant since) {
    }

    private final Duration bound;
    private final Map<TopicPartition, Seen> stuck = new HashMap<>();

    /** @param bound how long a transaction may stay open: the transaction timeout and a margin for the coordinator to abort it */
    HangingWatch(Duration bound) {
        this.bound = bound;
    }

    /**
     * One look at the partitions' offsets; returns those hanging now, each with the offset readers are held at (the
     * first offset of the transaction left open).
     */
    Map<TopicPartition, Long> observe(Map<TopicPartition, Long> stable, Map<TopicPartition, Long> high, Instant now) {
        Map<TopicPartition, Long> hanging = new HashMap<>();
        for (Map.Entry<TopicPartition, Long> partition : stable.entrySet()) {
            Long end = high.get(partition.getKey());
            if (end == null || partition.getValue() >= end) {
                stuck.remove(partition.getKey());
                continue;
            }
            Seen seen = stuck.get(partition.getKey());
            if (seen == null || seen.stable() != partition.getValue()) {
                stuck.put(partition.getKey(), new Seen(partition.getValue(), now));
            } else if (!seen.since().plus(bound).isAfter(now)) {
                hanging.put(partition.getKey(), seen.stable());
            }
        }
        stuck.keySet().retainAll(stable.keySet());
        return hanging;
    }

    /** The operator's commands for each hanging partition (docs/operations.md, "A transaction left hanging"). */
    static String runbook(Map<TopicPartition, Long> hanging) {
        return String.join("; ", hanging.entrySet().stream().map(e -> "kafka-transactions.sh --bootstrap-server <broker> abort --topic "
                + e.getKey().topic() + " --partition " + e.getKey().partition() + " --start-offset " + e.getValue()).toList());
    }

    static List<String> names(Map<TopicPartition, Long> hanging) {
        return hanging.keySet().stream().map(TopicPartition::toString).sorted().toList();
    }
}
