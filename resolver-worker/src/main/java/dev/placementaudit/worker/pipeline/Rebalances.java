package dev.placementaudit.worker.pipeline;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Collection;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Runs inside poll on the loop thread. Only the look-ahead poll can find a transaction open: on revocation it commits,
 * with the generation that still owns the partitions, before they move to another worker; when the partitions are
 * already lost, the generation is gone and committing would fail, so it aborts. Either way the commit in flight ends
 * first (never a later batch committed without the earlier one), and the records polled ahead for the partitions that
 * leave are dropped: their next owner reads them again from the committed offset.
 */
final class Rebalances implements ConsumerRebalanceListener {
    private static final Logger LOG = LoggerFactory.getLogger(Rebalances.class);

    private final ResolverLoop loop;
    /** The input partitions assigned now, as the reconciler asks from its own thread. */
    private final Set<Integer> owned = ConcurrentHashMap.newKeySet();

    Rebalances(ResolverLoop loop) {
        this.loop = loop;
    }

    Set<Integer> owned() {
        return Set.copyOf(owned);
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        LOG.info("partitions revoked: {}", partitions);
        partitions.forEach(partition -> owned.remove(partition.partition()));
        loop.dropAhead(partitions);
        loop.settleOpen(true, partitions);
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> partitions) {
        LOG.warn("partitions lost: {}", partitions);
        partitions.forEach(partition -> owned.remove(partition.partition()));
        loop.dropAhead(partitions);
        loop.settleOpen(false, partitions);
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        LOG.info("partitions assigned: {}", partitions);
        partitions.forEach(partition -> owned.add(partition.partition()));
    }
}
