package dev.placementaudit.store.ingest;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadResolved;
import org.apache.avro.specific.SpecificRecordBase;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/** The summaries wait while they are far ahead of their decisions, and never on decisions that are not coming. */
class SummaryPacingTest {
    private static final TopicPartition SUMMARIES = new TopicPartition("load-resolved", 0);
    private static final TopicPartition DECISIONS = new TopicPartition("placement-decisions", 0);
    private static final TopicPartition OBSERVATIONS = new TopicPartition("load-observations", 0);

    private final MockConsumer<byte[], byte[]> consumer = new MockConsumer<>("earliest");
    private final SummaryPacing pacing = new SummaryPacing();

    SummaryPacingTest() {
        consumer.assign(List.of(SUMMARIES, DECISIONS, OBSERVATIONS));
    }

    @Test
    void summariesFarAheadOfTheirDecisionsWaitUntilTheDecisionsComeWithinHalfTheLead() {
        assertThat(pacing.pace(consumer, batch(decisions(0, 0, 10), summaries(0, 0, 10)))).isFalse();
        assertThat(consumer.paused()).isEmpty();

        assertThat(pacing.pace(consumer, batch(decisions(0, 10, 20), summaries(0, 10, SummaryPacing.LEAD + 30)))).isTrue();
        assertThat(consumer.paused()).as("only the summaries' partitions").containsExactly(SUMMARIES);
        assertThat(pacing.lead()).isEqualTo(SummaryPacing.LEAD + 10);

        // Decisions come; the summaries stay paused until the decisions are within half the lead.
        assertThat(pacing.pace(consumer, batch(decisions(0, 20, SummaryPacing.LEAD / 2 + 20)))).isTrue();
        assertThat(consumer.paused()).containsExactly(SUMMARIES);
        assertThat(pacing.pace(consumer, batch(decisions(0, SummaryPacing.LEAD / 2 + 20, SummaryPacing.LEAD)))).isFalse();
        assertThat(consumer.paused()).isEmpty();
        assertThat(pacing.pauses()).isEqualTo(1);
    }

    @Test
    void aBatchWithNoDecisionResumesTheSummaries() {
        pacing.pace(consumer, batch(decisions(0, 0, 1), summaries(0, 0, 2 * SummaryPacing.LEAD)));
        assertThat(consumer.paused()).containsExactly(SUMMARIES);

        // The decisions are all read (an empty poll), or another instance reads them: nothing waits on them.
        assertThat(pacing.pace(consumer, List.of())).isFalse();
        assertThat(consumer.paused()).isEmpty();
    }

    @Test
    void eachSourcePartitionIsComparedWithItsOwnDecisionsAndOneWithoutAnyHoldsNothing() {
        // Partition 1 of model-loads: its summaries are far ahead, but no decision of it has been read here.
        assertThat(pacing.pace(consumer, batch(decisions(0, 0, 10), summaries(0, 0, 10), summaries(1, 0, 5 * SummaryPacing.LEAD)))).isFalse();
        // Its first decisions show how far behind they are.
        assertThat(pacing.pace(consumer, batch(decisions(1, 0, 1)))).isTrue();
        assertThat(pacing.lead()).isEqualTo(5 * SummaryPacing.LEAD - 1);
    }

    @Test
    void partitionsAssignedAgainWhilePausedArePausedAgain() {
        pacing.pace(consumer, batch(decisions(0, 0, 1), summaries(0, 0, 2 * SummaryPacing.LEAD)));
        // A rebalance hands the partitions back unpaused; the database outage path resumes whatever was paused.
        consumer.resume(consumer.paused());
        assertThat(pacing.pace(consumer, batch(decisions(0, 1, 2)))).isTrue();
        assertThat(consumer.paused()).isEqualTo(Set.of(SUMMARIES));
    }

    @SafeVarargs
    private static List<Decoded> batch(List<Decoded>... parts) {
        List<Decoded> batch = new ArrayList<>();
        for (List<Decoded> part : parts) {
            batch.addAll(part);
        }
        return batch;
    }

    /** Decisions of the loads at model-loads offsets [from, to) of one source partition, one a load. */
    private static List<Decoded> decisions(int sourcePartition, long from, long to) {
        return records(DECISIONS, sourcePartition, from, to);
    }

    private static List<Decoded> summaries(int sourcePartition, long from, long to) {
        return records(SUMMARIES, sourcePartition, from, to);
    }

    private static List<Decoded> records(TopicPartition topic, int sourcePartition, long from, long to) {
        List<Decoded> records = new ArrayList<>();
        for (long offset = from; offset < to; offset++) {
            ConsumerRecord<byte[], byte[]> record = new ConsumerRecord<>(topic.topic(), topic.partition(), offset, null, null);
            SpecificRecordBase event = topic == SUMMARIES ? new LoadResolved() : new AllocationDecided();
            event.put("sourceTopic", "model-loads");
            event.put("sourcePartition", sourcePartition);
            event.put("sourceOffset", offset);
            records.add(topic == SUMMARIES ? new Decoded.Summary(record, (LoadResolved) event) : new Decoded.Decision(record, (AllocationDecided) event));
        }
        return records;
    }
}
