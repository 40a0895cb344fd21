package dev.placementaudit.worker.reconcile;

import org.apache.kafka.clients.consumer.ConsumerRecord;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Which loads of the input have no output yet, and which of those the worker's group has committed past: Kafka then
 * promises their outputs are visible (the offsets and the outputs commit in one transaction), so one still missing
 * after a bound was lost, whatever the cause (a transaction split by the broker, a bug of ours). No I/O: the
 * {@link Reconciler} feeds it what it reads.
 *
 * <p>An output is a load's summary or its dead letter, each naming the input partition and offset it came from. Outputs
 * may be read before their load (the two topics are read side by side): those are kept until the load comes, only for
 * offsets not yet read, so what is kept stays bounded by what is in flight.
 */
final class Completeness {
    /** A load read from the input with no output seen yet; {@code committedPast} is when the group was first seen past it. */
    private static final class Unsettled {
        final ConsumerRecord<byte[], byte[]> record;
        Instant committedPast;

        Unsettled(ConsumerRecord<byte[], byte[]> record) {
            this.record = record;
        }
    }

    private final Map<Integer, TreeMap<Long, Unsettled>> unsettled = new HashMap<>();
    /** Per input partition, outputs read before their load, at offsets not read yet. */
    private final Map<Integer, Set<Long>> early = new HashMap<>();
    /** Per input partition, the next offset the reader will give. */
    private final Map<Integer, Long> next = new HashMap<>();

    /** Where the reader starts an input partition: outputs of loads before it are not looked for. */
    void startAt(int partition, long offset) {
        next.put(partition, offset);
    }

    /** A load read from the input. */
    void loaded(ConsumerRecord<byte[], byte[]> record) {
        next.put(record.partition(), record.offset() + 1);
        Set<Long> before = early.get(record.partition());
        if (before != null && before.remove(record.offset())) {
            return;
        }
        unsettled.computeIfAbsent(record.partition(), p -> new TreeMap<>()).put(record.offset(), new Unsettled(record));
    }

    /** An output naming the input partition and offset of its load: that load is complete. */
    void settled(int partition, long offset) {
        TreeMap<Long, Unsettled> waiting = unsettled.get(partition);
        if (waiting != null && waiting.remove(offset) != null) {
            return;
        }
        Long reading = next.get(partition);
        if (reading != null && offset >= reading) {
            early.computeIfAbsent(partition, p -> new HashSet<>()).add(offset);
        }
    }

    /**
     * The loads of the {@code owned} partitions that the group has committed past ({@code committed}: the next offset it
     * will read, per partition) for at least {@code after} with still no output: taken out and returned, oldest first per
     * partition, for the caller to resolve again.
     */
    List<ConsumerRecord<byte[], byte[]>> overdue(Map<Integer, Long> committed, Set<Integer> owned, Instant now, Duration after) {
        List<ConsumerRecord<byte[], byte[]>> overdue = new ArrayList<>();
        unsettled.forEach((partition, waiting) -> {
            Long groupAt = committed.get(partition);
            if (groupAt == null || !owned.contains(partition)) {
                return;
            }
            Iterator<Unsettled> behind = waiting.headMap(groupAt, false).values().iterator();
            while (behind.hasNext()) {
                Unsettled load = behind.next();
                if (load.committedPast == null) {
                    load.committedPast = now;
                } else if (!load.committedPast.plus(after).isAfter(now)) {
                    overdue.add(load.record);
                    behind.remove();
                }
            }
        });
        return overdue;
    }

    /** Loads taken as overdue whose new outputs could not be published: overdue again at the next look. */
    void retry(List<ConsumerRecord<byte[], byte[]>> loads) {
        for (ConsumerRecord<byte[], byte[]> record : loads) {
            Unsettled again = new Unsettled(record);
            again.committedPast = Instant.EPOCH;
            unsettled.computeIfAbsent(record.partition(), p -> new TreeMap<>()).put(record.offset(), again);
        }
    }

    /** Loads the group has committed past with no output seen yet (some only lagging, some lost): a gauge. */
    int committedPastUnsettled(Map<Integer, Long> committed) {
        int count = 0;
        for (Map.Entry<Integer, TreeMap<Long, Unsettled>> partition : unsettled.entrySet()) {
            Long groupAt = committed.get(partition.getKey());
            if (groupAt != null) {
                count += partition.getValue().headMap(groupAt, false).size();
            }
        }
        return count;
    }

    /** Loads read with no output yet, committed past or not. */
    int unsettled() {
        return unsettled.values().stream().mapToInt(Map::size).sum();
    }
}
