package dev.placementaudit.worker.reconcile;

import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class HangingWatchTest {
    private static final TopicPartition P = new TopicPartition("load-resolved", 1);
    private final Instant t0 = Instant.parse("2026-12-07T00:00:00Z");
    private final HangingWatch watch = new HangingWatch(Duration.ofSeconds(60));

    @Test
    void readersHeldAtOneOffsetForLongerThanATransactionMayLastAreHanging() {
        assertThat(watch.observe(Map.of(P, 40L), Map.of(P, 50L), t0)).isEmpty();
        assertThat(watch.observe(Map.of(P, 40L), Map.of(P, 57L), t0.plusSeconds(59))).isEmpty();

        assertThat(watch.observe(Map.of(P, 40L), Map.of(P, 60L), t0.plusSeconds(60))).containsEntry(P, 40L);
        assertThat(HangingWatch.runbook(Map.of(P, 40L))).contains("abort --topic load-resolved --partition 1 --start-offset 40");
    }

    @Test
    void aStableOffsetThatMovesIsTransactionsCommittingNotAHang() {
        watch.observe(Map.of(P, 40L), Map.of(P, 50L), t0);
        watch.observe(Map.of(P, 48L), Map.of(P, 60L), t0.plusSeconds(50));

        assertThat(watch.observe(Map.of(P, 48L), Map.of(P, 70L), t0.plusSeconds(100))).isEmpty();
        assertThat(watch.observe(Map.of(P, 48L), Map.of(P, 70L), t0.plusSeconds(110))).containsKey(P);
    }

    @Test
    void aPartitionWithNothingOpenIsNeverHanging() {
        watch.observe(Map.of(P, 40L), Map.of(P, 50L), t0);

        assertThat(watch.observe(Map.of(P, 50L), Map.of(P, 50L), t0.plusSeconds(30))).isEmpty();
        assertThat(watch.observe(Map.of(P, 50L), Map.of(P, 51L), t0.plusSeconds(120))).isEmpty();
    }
}
