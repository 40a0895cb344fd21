package dev.placementaudit.store.ingest;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.common.TopicPartition;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Keeps the summaries ({@code load-resolved}) from running far ahead of the decisions they summarise while the store
 * catches up (after a stop, on a rebuild, a fleet's backlog): the consumer reads both topics independently, and the
 * summaries are 146 times fewer records, so in a backlog they arrive long before their decisions. A load whose plan is
 * new cannot complete before its decisions come, and every later load of its deployment waits behind it (loads
 * complete in log order): each of those rows is then written incomplete and written again when it completes. At the
 * fleet mix, replaying 20,000 loads from a full log, half the load rows were written twice that way, a quarter of the
 * {@code loads} table left as dead rows (docs/benchmarks.md).
 *
 * <p>Both kinds of record say where their load stands in {@code model-loads} (source topic, partition and offset). When
 * the summaries read are more than {@link #LEAD} loads ahead of the decisions read for the same source partition, the
 * summary partitions are paused until the decisions come within half of that, as Kafka Streams lines up its inputs by
 * time. Pausing changes what a batch holds, never what is written: the projection is a function of the log whatever
 * the batching (docs/adr/0006). So that nothing can wait on decisions that are not coming (another instance reads their
 * partitions, the decisions are all read, or a load has none), a batch with no decision in it resumes the summaries.
 * Not thread-safe: one per consumer, on its thread (the ingest loop's, a rebuild's).
 */
public final class SummaryPacing {
    /** How many loads (in {@code model-loads} offsets) the summaries may run ahead of the decisions of a source partition. */
    static final long LEAD = 500;

    private final Map<String, Long> decided = new HashMap<>();
    private final Map<String, Long> summarised = new HashMap<>();
    private final Set<String> summaryTopics = new HashSet<>();
    private boolean paused;
    private long pauses;

    /**
     * Takes in what a batch read, then pauses or resumes the summary partitions of {@code consumer}'s assignment.
     *
     * @return whether the summaries are paused now
     */
    public boolean pace(Consumer<?, ?> consumer, List<Decoded> batch) {
        boolean decisions = false;
        // A load's decisions come together and share its source: the maps are touched once per run of one source.
        Run run = new Run();
        for (Decoded record : batch) {
            if (record instanceof Decoded.Decision d) {
                decisions = true;
                run.add(decided, d.event().getSourceTopic(), d.event().getSourcePartition(), d.event().getSourceOffset());
            } else if (record instanceof Decoded.Summary s) {
                summaryTopics.add(s.record().topic());
                run.add(summarised, s.event().getSourceTopic(), s.event().getSourcePartition(), s.event().getSourceOffset());
            }
        }
        run.flush();
        long lead = lead();
        boolean pause = decisions && (paused ? lead > LEAD / 2 : lead > LEAD);
        if (pause != paused) {
            paused = pause;
            if (pause) {
                pauses++;
            }
        }
        Set<TopicPartition> summaries = new HashSet<>();
        for (TopicPartition partition : consumer.assignment()) {
            if (summaryTopics.contains(partition.topic())) {
                summaries.add(partition);
            }
        }
        if (paused) {
            consumer.pause(summaries);
        } else {
            summaries.retainAll(consumer.paused());
            consumer.resume(summaries);
        }
        return paused;
    }

    /** How far the summaries read are ahead of the decisions read, in loads, at the source partition where it is most. */
    public long lead() {
        long lead = 0;
        for (Map.Entry<String, Long> summary : summarised.entrySet()) {
            Long decisions = decided.get(summary.getKey());
            if (decisions != null) {
                lead = Math.max(lead, summary.getValue() - decisions);
            }
        }
        return lead;
    }

    /** How many times the summaries were paused. */
    public long pauses() {
        return pauses;
    }

    /** The highest offset seen in a run of records of one source and one kind, merged into its map when the run ends. */
    private static final class Run {
        private Map<String, Long> into;
        private CharSequence topic;
        private int partition;
        private long offset;

        void add(Map<String, Long> map, CharSequence topic, int partition, long offset) {
            if (map == into && partition == this.partition && topic.equals(this.topic)) {
                this.offset = Math.max(this.offset, offset);
                return;
            }
            flush();
            this.into = map;
            this.topic = topic;
            this.partition = partition;
            this.offset = offset;
        }

        void flush() {
            if (into != null) {
                into.merge(topic + "-" + partition, offset, Math::max);
            }
        }
    }
}
