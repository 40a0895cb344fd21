package dev.placementaudit.worker.reconcile;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

class CompletenessTest {
    private static final Duration AFTER = Duration.ofMinutes(2);
    private final Instant t0 = Instant.parse("2026-12-07T00:00:00Z");
    private final Completeness completeness = new Completeness();

    @Test
    void aLoadTheGroupIsPastWithNoOutputIsOverdueOnlyOnceTheBoundHasPassedSinceTheGroupWasSeenPastIt() {
        completeness.startAt(0, 10);
        completeness.loaded(0, 10);
        completeness.loaded(0, 11);

        assertThat(completeness.overdue(Map.of(0, 12L), Set.of(0), t0, AFTER, 1, Long.MAX_VALUE)).isEmpty();
        assertThat(completeness.overdue(Map.of(0, 12L), Set.of(0), t0.plus(AFTER).minusSeconds(1), AFTER, 1, Long.MAX_VALUE)).isEmpty();
        assertThat(completeness.overdue(Map.of(0, 12L), Set.of(0), t0.plus(AFTER), AFTER, 1, Long.MAX_VALUE)).extracting(Completeness.Load::offset)
                .containsExactly(10L, 11L);
        assertThat(completeness.unsettled()).isZero();
    }

    @Test
    void aLoadTheGroupIsNotPastIsOnlyLaggingAndNeverOverdue() {
        completeness.startAt(0, 0);
        completeness.loaded(0, 0);
        completeness.loaded(0, 1);

        completeness.overdue(Map.of(0, 1L), Set.of(0), t0, AFTER, 1, Long.MAX_VALUE);
        assertThat(completeness.overdue(Map.of(0, 1L), Set.of(0), t0.plus(Duration.ofHours(1)), AFTER, 1, Long.MAX_VALUE)).extracting(Completeness.Load::offset)
                .containsExactly(0L);
        assertThat(completeness.unsettled()).isEqualTo(1);
    }

    @Test
    void anOutputSettlesItsLoadWhetherReadBeforeOrAfterIt() {
        completeness.startAt(0, 0);
        completeness.loaded(0, 0);
        completeness.settled(0, 0);
        completeness.settled(0, 1);
        completeness.loaded(0, 1);

        completeness.overdue(Map.of(0, 2L), Set.of(0), t0, AFTER, 1, Long.MAX_VALUE);
        assertThat(completeness.overdue(Map.of(0, 2L), Set.of(0), t0.plus(AFTER), AFTER, 1, Long.MAX_VALUE)).isEmpty();
        assertThat(completeness.unsettled()).isZero();
    }

    @Test
    void outputsOfLoadsBeforeWhereReadingStartedAreNotKept() {
        completeness.startAt(0, 100);
        completeness.settled(0, 5);
        completeness.loaded(0, 100);

        completeness.overdue(Map.of(0, 101L), Set.of(0), t0, AFTER, 1, Long.MAX_VALUE);
        assertThat(completeness.overdue(Map.of(0, 101L), Set.of(0), t0.plus(AFTER), AFTER, 1, Long.MAX_VALUE)).extracting(Completeness.Load::offset).containsExactly(100L);
    }

    @Test
    void onlyTheOwnedPartitionsAreReconciledHere() {
        completeness.startAt(0, 0);
        completeness.startAt(1, 0);
        completeness.loaded(0, 0);
        completeness.loaded(1, 0);

        completeness.overdue(Map.of(0, 1L, 1, 1L), Set.of(1), t0, AFTER, 1, Long.MAX_VALUE);
        assertThat(completeness.overdue(Map.of(0, 1L, 1, 1L), Set.of(1), t0.plus(AFTER), AFTER, 1, Long.MAX_VALUE)).extracting(Completeness.Load::partition)
                .containsExactly(1);
        assertThat(completeness.committedPastUnsettled(Map.of(0, 1L, 1, 1L))).isEqualTo(1);
    }

    @Test
    void loadsWhoseRedoFailedAreOverdueAgainAtOnce() {
        completeness.startAt(0, 0);
        completeness.loaded(0, 0);
        completeness.overdue(Map.of(0, 1L), Set.of(0), t0, AFTER, 1, Long.MAX_VALUE);
        List<Completeness.Load> late = completeness.overdue(Map.of(0, 1L), Set.of(0), t0.plus(AFTER), AFTER, 1, Long.MAX_VALUE);

        completeness.retry(late);

        assertThat(completeness.overdue(Map.of(0, 1L), Set.of(0), t0.plus(AFTER), AFTER, 1, Long.MAX_VALUE)).extracting(Completeness.Load::offset).containsExactly(0L);
    }

    /** A transaction open on an output holds the reader back: the load's summary may be behind it, so no guess is made. */
    @Test
    void aLoadIsNeverOverdueWhileTheReaderHasNotReadTheOutputsAsFarAsTheyWereWhenTheGroupWasSeenPastIt() {
        completeness.startAt(0, 0);
        completeness.loaded(0, 0);
        completeness.overdue(Map.of(0, 1L), Set.of(0), t0, AFTER, 7, 6);

        assertThat(completeness.overdue(Map.of(0, 1L), Set.of(0), t0.plus(Duration.ofHours(1)), AFTER, 30, 6)).isEmpty();
        assertThat(completeness.committedPastUnsettled(Map.of(0, 1L))).as("still counted as overdue on the gauge").isEqualTo(1);
        assertThat(completeness.overdue(Map.of(0, 1L), Set.of(0), t0.plus(Duration.ofHours(1)), AFTER, 31, 7)).extracting(Completeness.Load::offset)
                .containsExactly(0L);
    }
}
