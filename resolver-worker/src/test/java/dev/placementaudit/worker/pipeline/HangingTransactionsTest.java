package dev.placementaudit.worker.pipeline;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Which transactions the worker aborts after making its producer anew: only its own producer id's, only of an older
 * epoch, only those still open on the partition. Aborting anything else would take another producer's transaction, or
 * this incarnation's own, from under it. {@link WorkerBrokerOutageTest} meets the real thing after broker crashes.
 */
class HangingTransactionsTest {
    private static final long OURS = 7;
    private static final int NOW = 317;
    private static final TopicPartition DECIDED = new TopicPartition("allocation-decided", 0);
    private static final TopicPartition RESOLVED = new TopicPartition("load-resolved", 2);
    private static final TopicPartition OFFSETS = new TopicPartition("__consumer_offsets", 13);

    private static ProducerState open(long producerId, int epoch, OptionalInt coordinatorEpoch) {
        return new ProducerState(producerId, epoch, 5, 1_000L, coordinatorEpoch, OptionalLong.of(423));
    }

    private static ProducerState closed(long producerId, int epoch) {
        return new ProducerState(producerId, epoch, 5, 1_000L, OptionalInt.of(3), OptionalLong.empty());
    }

    @Test
    void abortsOnlyItsOwnOlderTransactionsStillOpen() {
        Map<TopicPartition, List<ProducerState>> producers = new LinkedHashMap<>();
        producers.put(DECIDED, List.of(open(OURS, 315, OptionalInt.of(4)), open(99, 12, OptionalInt.of(4))));
        producers.put(RESOLVED, List.of(closed(OURS, 315), open(OURS, NOW, OptionalInt.of(4))));
        producers.put(OFFSETS, List.of(open(OURS, 311, OptionalInt.empty())));

        List<HangingTransactions.Hanging> found = HangingTransactions.leftOpen(OURS, NOW, producers);
        List<AbortTransactionSpec> hanging = found.stream().map(HangingTransactions.Hanging::abort).toList();

        assertThat(hanging).extracting(AbortTransactionSpec::topicPartition).containsExactly(DECIDED, OFFSETS);
        assertThat(found).extracting(HangingTransactions.Hanging::startOffset).as("where each began there").containsExactly(423L, 423L);
        assertThat(hanging.get(0).producerId()).isEqualTo(OURS);
        assertThat(hanging.get(0).producerEpoch()).isEqualTo((short) 315);
        assertThat(hanging.get(0).coordinatorEpoch()).isEqualTo(4);
        assertThat(hanging.get(1).producerEpoch()).as("the epoch of the transaction left open, not the current one").isEqualTo((short) 311);
        assertThat(hanging.get(1).coordinatorEpoch()).as("a partition that never saw a marker of it").isZero();
    }

    @Test
    void nothingLeftOpenIsNothingAborted() {
        assertThat(HangingTransactions.leftOpen(OURS, NOW, Map.of(DECIDED, List.of(closed(OURS, 316)), RESOLVED, List.of()))).isEmpty();
    }

    // The sweep that runs after the look at recovery: a transaction still open a while later, not the coordinator's live one.

    private static final Duration MIN_AGE = Duration.ofSeconds(30);
    private static final Instant T0 = Instant.parse("2026-12-06T10:00:00Z");
    private static final HangingTransactions.Live FINISHED = new HangingTransactions.Live(OURS, NOW, false, Set.of());

    private static Map<TopicPartition, List<ProducerState>> openOn(TopicPartition partition, ProducerState... states) {
        return Map.of(partition, List.of(states));
    }

    private static ProducerState openFrom(long producerId, int epoch, long startOffset) {
        return new ProducerState(producerId, epoch, 5, 1_000L, OptionalInt.of(4), OptionalLong.of(startOffset));
    }

    @Test
    void aTransactionStillOpenAfterTheTransactionTimeoutAndItsMarginIsAborted() {
        Map<HangingTransactions.Open, Instant> seen = new HashMap<>();
        Map<TopicPartition, List<ProducerState>> hangingOnResolved = openOn(RESOLVED, openFrom(OURS, 315, 900));

        assertThat(HangingTransactions.stillOpen(seen, Set.of(OURS), FINISHED, hangingOnResolved, T0, MIN_AGE))
                .as("first seen: it may be about to get its marker").isEmpty();
        assertThat(HangingTransactions.stillOpen(seen, Set.of(OURS), FINISHED, hangingOnResolved, T0.plus(MIN_AGE).minusMillis(1), MIN_AGE))
                .as("younger than the timeout and its margin").isEmpty();
        List<AbortTransactionSpec> aborted = HangingTransactions.stillOpen(seen, Set.of(OURS), FINISHED, hangingOnResolved, T0.plus(MIN_AGE), MIN_AGE);

        assertThat(aborted).singleElement().satisfies(abort -> {
            assertThat(abort.topicPartition()).isEqualTo(RESOLVED);
            assertThat(abort.producerId()).isEqualTo(OURS);
            assertThat(abort.producerEpoch()).isEqualTo((short) 315);
            assertThat(abort.coordinatorEpoch()).isEqualTo(4);
        });
    }

    @Test
    void theCoordinatorsLiveTransactionIsNeverSweptHoweverOld() {
        Map<HangingTransactions.Open, Instant> seen = new HashMap<>();
        HangingTransactions.Live live = new HangingTransactions.Live(OURS, NOW, true, Set.of(RESOLVED, DECIDED));
        Map<TopicPartition, List<ProducerState>> open = openOn(RESOLVED, openFrom(OURS, NOW, 900));

        HangingTransactions.stillOpen(seen, Set.of(OURS), live, open, T0, MIN_AGE);
        assertThat(HangingTransactions.stillOpen(seen, Set.of(OURS), live, open, T0.plus(MIN_AGE.multipliedBy(10)), MIN_AGE)).isEmpty();
        assertThat(seen).as("not even remembered").isEmpty();
    }

    @Test
    void openWhereItsCoordinatorDoesNotKnowItIsHangingEvenAtTheLiveEpoch() {
        Map<HangingTransactions.Open, Instant> seen = new HashMap<>();
        HangingTransactions.Live live = new HangingTransactions.Live(OURS, NOW, true, Set.of(DECIDED));
        Map<TopicPartition, List<ProducerState>> open = openOn(RESOLVED, openFrom(OURS, NOW, 900));

        HangingTransactions.stillOpen(seen, Set.of(OURS), live, open, T0, MIN_AGE);
        assertThat(HangingTransactions.stillOpen(seen, Set.of(OURS), live, open, T0.plus(MIN_AGE), MIN_AGE))
                .extracting(AbortTransactionSpec::topicPartition).containsExactly(RESOLVED);
    }

    @Test
    void anotherProducersTransactionIsNeverSweptAnEarlierIdOfOursIs() {
        Map<HangingTransactions.Open, Instant> seen = new HashMap<>();
        long earlierOfOurs = 3;
        Map<TopicPartition, List<ProducerState>> open = openOn(DECIDED, openFrom(99, 12, 40), openFrom(earlierOfOurs, 32_000, 41));

        HangingTransactions.stillOpen(seen, Set.of(OURS, earlierOfOurs), FINISHED, open, T0, MIN_AGE);
        assertThat(HangingTransactions.stillOpen(seen, Set.of(OURS, earlierOfOurs), FINISHED, open, T0.plus(MIN_AGE), MIN_AGE))
                .extracting(AbortTransactionSpec::producerId).containsExactly(earlierOfOurs);
    }

    @Test
    void aTransactionThatClosedAndAnotherThatOpenedIsANewOneWhoseAgeStartsAgain() {
        Map<HangingTransactions.Open, Instant> seen = new HashMap<>();
        HangingTransactions.stillOpen(seen, Set.of(OURS), FINISHED, openOn(RESOLVED, openFrom(OURS, 315, 900)), T0, MIN_AGE);
        assertThat(HangingTransactions.stillOpen(seen, Set.of(OURS), FINISHED, openOn(RESOLVED, openFrom(OURS, 315, 950)), T0.plus(MIN_AGE), MIN_AGE))
                .as("another first offset: another transaction").isEmpty();
        HangingTransactions.stillOpen(seen, Set.of(OURS), FINISHED, Map.of(RESOLVED, List.of(closed(OURS, 315))), T0.plus(MIN_AGE).plusSeconds(1), MIN_AGE);
        assertThat(HangingTransactions.stillOpen(seen, Set.of(OURS), FINISHED, openOn(RESOLVED, openFrom(OURS, 315, 950)), T0.plus(MIN_AGE.multipliedBy(2)), MIN_AGE))
                .as("closed in between: seen for the first time again").isEmpty();
    }
}
