package dev.placementaudit.worker.pipeline;

import dev.placementaudit.worker.pipeline.Transactions.OpenTransaction;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.common.KafkaException;
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
    private final Commits commits;
    /** The input partitions assigned now, as the reconciler asks from its own thread. */
    private final Set<Integer> owned = ConcurrentHashMap.newKeySet();

    Rebalances(ResolverLoop loop, Commits commits) {
        this.loop = loop;
        this.commits = commits;
    }

    Set<Integer> owned() {
        return Set.copyOf(owned);
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        LOG.info("partitions revoked: {}", partitions);
        partitions.forEach(partition -> owned.remove(partition.partition()));
        loop.dropAhead(partitions);
        settleOpen(true, partitions);
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> partitions) {
        LOG.warn("partitions lost: {}", partitions);
        partitions.forEach(partition -> owned.remove(partition.partition()));
        loop.dropAhead(partitions);
        settleOpen(false, partitions);
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        LOG.info("partitions assigned: {}", partitions);
        partitions.forEach(partition -> owned.add(partition.partition()));
    }

    /**
     * The commit in flight ends first; then the open transaction, if any, commits with the generation that still owns
     * its partitions ({@code revoked}) or, the partitions being lost already, aborts. A failure is kept on the open
     * transaction (or, with none open, on the loop) and handled once the poll returns.
     */
    private void settleOpen(boolean revoked, Collection<TopicPartition> partitions) {
        OpenTransaction open = loop.open();
        KafkaException previous = commits.awaitCommit();
        if (previous != null) {
            if (open != null && open.failure == null) {
                open.failure = previous;
                abortInCallback();
            } else if (open == null) {
                loop.commitFailedMeanwhile(previous);
            }
            return;
        }
        if (open == null || open.failure != null) {
            return;
        }
        if (!revoked) {
            open.failure = new CommitFailedException("partitions " + partitions + " were lost with a transaction open; it is aborted");
            abortInCallback();
            return;
        }
        try {
            commits.commit(open.offsets, loop.consumer().groupMetadata(), open.outcome);
            loop.openCommitted();
        } catch (KafkaException e) {
            open.failure = e;
            abortInCallback();
        }
    }

    /** A fencing error here is not lost: the loop rethrows the open transaction's failure after the poll. */
    private void abortInCallback() {
        try {
            commits.producer().abortQuietly();
        } catch (KafkaException fatal) {
            LOG.debug("abort in rebalance callback failed: {}", fatal.toString());
        }
    }
}
