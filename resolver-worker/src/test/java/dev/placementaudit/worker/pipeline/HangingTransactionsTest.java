package dev.placementaudit.worker.pipeline;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.OptionalLong;

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

        List<AbortTransactionSpec> hanging = HangingTransactions.leftOpen(OURS, NOW, producers);

        assertThat(hanging).extracting(AbortTransactionSpec::topicPartition).containsExactly(DECIDED, OFFSETS);
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
}
