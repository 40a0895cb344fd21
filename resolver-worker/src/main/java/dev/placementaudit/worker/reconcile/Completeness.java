package dev.placementaudit.worker.reconcile;

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
 * offsets not yet read. A load is kept as its offset alone (a backlog of a million loads is some tens of megabytes):
 * the few found overdue are read again by offset.
 */
final class Completeness {
    /** An input record: the load at this partition and offset. */
    record Load(int partition, long offset) {
    }

    /** When the group was first seen past a load, and at which look (the reconciler numbers its looks). */
    private record Seen(Instant at, long look) {
    }

    /** Per input partition, each load read with no output seen yet, and when the group was first seen past it. */
    private final Map<Integer, TreeMap<Long, Seen>> unsettled = new HashMap<>();
    /** Not seen committed past yet: no real look is this one. */
    private static final Seen NOT_YET = new Seen(Instant.MIN, Long.MIN_VALUE);
    /** Per input partition, outputs read before their load, at offsets not read yet. */
    private final Map<Integer, Set<Long>> early = new HashMap<>();
    /** Per input partition, the next offset the reader will give. */
    private final Map<Integer, Long> next = new HashMap<>();

    /** Where the reader starts an input partition: outputs of loads before it are not looked for. */
    void startAt(int partition, long offset) {
        next.put(partition, offset);
    }

    /** A load read from the input. */
    void loaded(int partition, long offset) {
        next.put(partition, offset + 1);
        Set<Long> before = early.get(partition);
        if (before != null && before.remove(offset)) {
            return;
        }
        unsettled.computeIfAbsent(partition, p -> new TreeMap<>()).put(offset, NOT_YET);
    }

    /** An output naming the input partition and offset of its load: that load is complete. */
    void settled(int partition, long offset) {
        TreeMap<Long, Seen> waiting = unsettled.get(partition);
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
     *
     * <p>Only loads first seen committed past at a look no later than {@code readThrough} qualify: the newest look whose
     * outputs, as far as they had been written then, the reader has read since. The outputs of a load the group was past
     * at that look were written by then, so if the reader has read that far and not seen them, they are not there. A
     * reader held back (a transaction open on an output, hanging or slow) holds {@code readThrough} back with it, and
     * nothing is resolved again on a guess.
     *
     * @param look this look's number, increasing
     */
    List<Load> overdue(Map<Integer, Long> committed, Set<Integer> owned, Instant now, Duration after, long look, long readThrough) {
        List<Load> overdue = new ArrayList<>();
        unsettled.forEach((partition, waiting) -> {
            Long groupAt = committed.get(partition);
            if (groupAt == null || !owned.contains(partition)) {
                return;
            }
            Iterator<Map.Entry<Long, Seen>> behind = waiting.headMap(groupAt, false).entrySet().iterator();
            while (behind.hasNext()) {
                Map.Entry<Long, Seen> load = behind.next();
                if (load.getValue().equals(NOT_YET)) {
                    load.setValue(new Seen(now, look));
                } else if (!load.getValue().at().plus(after).isAfter(now) && load.getValue().look() <= readThrough) {
                    overdue.add(new Load(partition, load.getKey()));
                    behind.remove();
                }
            }
        });
        return overdue;
    }

    /** Loads taken as overdue whose new outputs could not be published: overdue again at the next look. */
    void retry(List<Load> loads) {
        for (Load load : loads) {
            unsettled.computeIfAbsent(load.partition(), p -> new TreeMap<>()).put(load.offset(), new Seen(Instant.EPOCH, Long.MIN_VALUE + 1));
        }
    }

    /** Loads the group has committed past with no output seen yet (some only lagging, some lost): a gauge. */
    int committedPastUnsettled(Map<Integer, Long> committed) {
        int count = 0;
        for (Map.Entry<Integer, TreeMap<Long, Seen>> partition : unsettled.entrySet()) {
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
