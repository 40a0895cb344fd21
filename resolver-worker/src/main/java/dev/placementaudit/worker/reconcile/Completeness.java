package dev.placementaudit.worker.reconcile;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Which offsets of the input the worker's group has committed past with no output yet: Kafka then promises their
 * outputs are visible (the offsets and the outputs commit in one transaction), so one still missing after a bound was
 * lost, whatever the cause (a transaction split by the broker, a bug of ours). No I/O: the {@link Reconciler} feeds it
 * the outputs it reads and the group's offsets.
 *
 * <p>An output is a load's summary or its dead letter, each naming the input partition and offset it came from. The input
 * itself is not read: every offset below the group's is a load, unless it is a transaction's marker or an aborted
 * record, which the reconciler finds out when it reads an overdue offset again and finds no load there. Settled offsets
 * are kept as bits above the lowest offset not yet settled, so a backlog costs a bit a load.
 */
final class Completeness {
    /** An input offset overdue: the load at this partition and offset, if there is one. */
    record Load(int partition, long offset) {
    }

    private static final class Partition {
        /** Bit {@code i} set: offset {@code base + i} is settled. Every offset below {@code base} is. */
        private long base;
        private BitSet settled = new BitSet();

        Partition(long start) {
            base = start;
        }

        boolean isSettled(long offset) {
            return offset < base || settled.get(Math.toIntExact(offset - base));
        }

        void settle(long offset) {
            if (offset < base) {
                return;
            }
            settled.set(Math.toIntExact(offset - base));
            int firstOpen = settled.nextClearBit(0);
            if (firstOpen >= 4096) {
                // Forget what lies below the lowest open offset: it is all settled.
                settled = settled.get(firstOpen, Math.max(firstOpen, settled.length()));
                base += firstOpen;
            }
        }

        void unsettle(long offset) {
            if (offset >= base) {
                settled.clear(Math.toIntExact(offset - base));
            }
        }

        /** Offsets in [base, end) with no output. */
        long open(long end) {
            if (end <= base) {
                return 0;
            }
            int span = Math.toIntExact(end - base);
            return span - settled.get(0, span).cardinality();
        }

        /** The next offset at or above {@code from} with no output. */
        long nextOpen(long from) {
            long at = Math.max(from, base);
            return base + settled.nextClearBit(Math.toIntExact(at - base));
        }
    }

    private final Map<Integer, Partition> partitions = new HashMap<>();

    /** Where the input partition is looked at from: offsets below it are not looked for. */
    void startAt(int partition, long offset) {
        partitions.put(partition, new Partition(offset));
    }

    /** Whether the input partition is looked at: it existed at the start, or {@link #startAt} took it in since. */
    boolean knows(int partition) {
        return partitions.containsKey(partition);
    }

    /** An output naming the input partition and offset of its load: that offset is complete. */
    void settled(int partition, long offset) {
        Partition p = partitions.get(partition);
        if (p != null) {
            p.settle(offset);
        }
    }

    /**
     * The offsets of the {@code owned} partitions below {@code boundary} with still no output: taken (counted as settled)
     * and returned, oldest first per partition, for the caller to read again and resolve again; one whose new outputs
     * cannot be published goes back with {@link #retry}.
     *
     * <p>The caller gives, per partition, where the group's committed offset stood at a look at least
     * {@code worker.reconcile.after} ago whose outputs, as far as they had been written then, the reader has read since.
     * The outputs of every load below that offset were written by then (the offsets and the outputs commit together), so
     * if the reader has read that far and not seen one, it is not there. A reader held back (a transaction open on an
     * output, hanging or slow) holds that look back with it, and nothing is resolved again on a guess.
     */
    List<Load> overdue(Map<Integer, Long> boundary, Set<Integer> owned) {
        List<Load> overdue = new ArrayList<>();
        partitions.forEach((partition, p) -> {
            Long below = boundary.get(partition);
            if (below == null || !owned.contains(partition)) {
                return;
            }
            List<Long> taken = new ArrayList<>();
            for (long offset = p.nextOpen(0); offset < below; offset = p.nextOpen(offset + 1)) {
                overdue.add(new Load(partition, offset));
                taken.add(offset);
            }
            taken.forEach(p::settle);
        });
        return overdue;
    }

    /** Offsets taken as overdue whose new outputs could not be published: overdue again at the next look. */
    void retry(List<Load> loads) {
        for (Load load : loads) {
            Partition p = partitions.get(load.partition());
            if (p != null) {
                p.unsettle(load.offset());
            }
        }
    }

    /** Offsets the group has committed past with no output seen yet (some only lagging, some lost): a gauge. */
    int committedPastUnsettled(Map<Integer, Long> committed) {
        int count = 0;
        for (Map.Entry<Integer, Partition> partition : partitions.entrySet()) {
            Long groupAt = committed.get(partition.getKey());
            if (groupAt != null) {
                count += (int) Math.min(Integer.MAX_VALUE - count, partition.getValue().open(groupAt));
            }
        }
        return count;
    }
}
