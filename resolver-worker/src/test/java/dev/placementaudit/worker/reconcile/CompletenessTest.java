package dev.placementaudit.worker.reconcile;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

class CompletenessTest {
    private final Completeness completeness = new Completeness();

    @Test
    void everyOffsetBelowTheBoundaryWithNoOutputIsOverdueOnceOldestFirst() {
        completeness.startAt(0, 10);
        completeness.settled(0, 11);
        completeness.settled(0, 13);

        assertThat(completeness.overdue(Map.of(0, 15L), Set.of(0))).extracting(Completeness.Load::offset).containsExactly(10L, 12L, 14L);
        assertThat(completeness.overdue(Map.of(0, 15L), Set.of(0))).as("taken: not overdue twice").isEmpty();
        assertThat(completeness.committedPastUnsettled(Map.of(0, 15L))).isZero();
    }

    @Test
    void offsetsAtOrAboveTheBoundaryAreOnlyLaggingAndCountedNotTaken() {
        completeness.startAt(0, 0);
        completeness.settled(0, 0);

        assertThat(completeness.overdue(Map.of(0, 1L), Set.of(0))).isEmpty();
        assertThat(completeness.committedPastUnsettled(Map.of(0, 3L))).as("offsets 1 and 2: the group is past them, no output yet").isEqualTo(2);
    }

    @Test
    void anOutputSettlesItsOffsetInAnyOrder() {
        completeness.startAt(0, 0);
        completeness.settled(0, 2);
        completeness.settled(0, 0);
        completeness.settled(0, 1);

        assertThat(completeness.overdue(Map.of(0, 3L), Set.of(0))).isEmpty();
    }

    @Test
    void outputsOfLoadsBeforeWhereLookingStartedAreIgnored() {
        completeness.startAt(0, 100);
        completeness.settled(0, 5);

        assertThat(completeness.overdue(Map.of(0, 101L), Set.of(0))).extracting(Completeness.Load::offset).containsExactly(100L);
    }

    @Test
    void onlyTheOwnedPartitionsAreReconciledHere() {
        completeness.startAt(0, 0);
        completeness.startAt(1, 0);

        assertThat(completeness.overdue(Map.of(0, 1L, 1, 1L), Set.of(1))).extracting(Completeness.Load::partition).containsExactly(1);
        assertThat(completeness.committedPastUnsettled(Map.of(0, 1L, 1, 1L))).isEqualTo(1);
    }

    @Test
    void offsetsWhoseRedoFailedAreOverdueAgainAtOnce() {
        completeness.startAt(0, 0);
        List<Completeness.Load> late = completeness.overdue(Map.of(0, 1L), Set.of(0));

        completeness.retry(late);

        assertThat(completeness.overdue(Map.of(0, 1L), Set.of(0))).extracting(Completeness.Load::offset).containsExactly(0L);
    }

    /** A long run of settled offsets is forgotten below the lowest open one; what is open is still found. */
    @Test
    void aMillionSettledOffsetsCostBitsAndAGapAmongThemIsFound() {
        completeness.startAt(0, 0);
        for (long offset = 0; offset < 1_000_000; offset++) {
            if (offset != 777_777) {
                completeness.settled(0, offset);
            }
        }

        assertThat(completeness.committedPastUnsettled(Map.of(0, 1_000_000L))).isEqualTo(1);
        assertThat(completeness.overdue(Map.of(0, 1_000_000L), Set.of(0))).extracting(Completeness.Load::offset).containsExactly(777_777L);
    }
}
