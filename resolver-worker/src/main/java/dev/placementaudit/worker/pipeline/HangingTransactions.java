package dev.placementaudit.worker.pipeline;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.internals.Topic;
import org.apache.kafka.common.utils.Utils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * Transactions an older incarnation of this worker's producer left open on a partition, found and aborted before the new
 * one writes anything. They are what a broker killed mid-transaction can leave behind (seen with Kafka 4.4 and a broker
 * SIGKILLed for 3 s): the coordinator came back without knowing that the transaction had touched a partition, so neither
 * the new producer's {@code initTransactions} nor the transaction timeout wrote that partition's abort marker. On an
 * output topic the records then hang (read_committed readers stop at them) or are shown once a later transaction's
 * records follow, and the batch is redone: its loads resolved twice. On the group's offsets partition the pending offsets
 * make {@code committed()} answer "unstable" for ever, and the worker cannot rewind.
 *
 * <p>It runs only after {@code initTransactions} returned: the coordinator has then completed whatever commit had begun
 * and bumped the epoch, so a transaction of the same producer id with an older epoch will never get its marker there
 * and is hanging by definition. That does not say it was aborted: with Kafka 4.4 and a broker killed for 3 s
 * (WorkerBrokerOutageTest), a transaction whose commit the worker had seen succeed came back with its commit markers on
 * the output partitions and none on the offsets partition, and another with no marker anywhere; this abort then takes
 * away its offsets, or all of it. The loop tells them apart by what was aborted and by what it can read: offsets only,
 * and the transaction's records read read_committed on every partition it wrote ({@link CommitWitness}), it resumes
 * after them and commits those offsets again (its loads are not resolved twice); an output's part aborted, it redoes
 * that transaction from where it began; nothing proven, it redoes from the group's offsets (a load twice rather than
 * none: the store keeps one). This is what
 * {@code kafka-transactions.sh find-hanging} and {@code abort} do, limited to this worker's own producer id and the
 * partitions it writes. The look runs at each recovery ({@link #abortLeftOpen}) and, since one can be left where that
 * look did not see it, again every so often while the worker runs ({@link #sweep}, from {@link HangingSweep}). Without
 * the rights to do it (describe and write on the
 * cluster), it says what an operator should run and goes on. The admin client is the worker's, shared by its producers'
 * lookups, and closed by the worker.
 */
final class HangingTransactions implements LeftOpen {
    private static final Logger LOG = LoggerFactory.getLogger(HangingTransactions.class);

    private static final Set<TransactionState> UNFINISHED = EnumSet.of(TransactionState.ONGOING, TransactionState.PREPARE_COMMIT,
            TransactionState.PREPARE_ABORT, TransactionState.PREPARE_EPOCH_FENCE);

    private final Admin admin;
    private final String transactionalId;
    private final List<String> outputTopics;
    private final String groupId;
    private final Duration timeout;
    private volatile boolean warnedUnauthorized;
    /** The producer ids this transactional id has had, as the coordinator said at each look; the sweep aborts only theirs. */
    private final Set<Long> producerIds = ConcurrentHashMap.newKeySet();
    /** Transactions the last sweep saw open, with when each was first seen; only the sweeping thread touches it. */
    private final Map<Open, Instant> seenOpen = new HashMap<>();

    HangingTransactions(Admin admin, String transactionalId, List<String> outputTopics, String groupId, Duration timeout) {
        this.admin = admin;
        this.transactionalId = transactionalId;
        this.outputTopics = List.copyOf(outputTopics);
        this.groupId = groupId;
        this.timeout = timeout;
    }

    /**
     * Aborts, on every partition this worker writes, the transactions of its producer id whose epoch is older than the
     * current one and that are still open there.
     *
     * @throws KafkaException when the broker does not answer in time (the caller retries, as it does for the producer)
     */
    @Override
    public List<Aborted> abortLeftOpen() {
        try {
            TransactionDescription current = describe();
            List<Hanging> hanging = leftOpen(current.producerId(), current.producerEpoch(), producersOn(partitionsWritten()));
            for (Hanging one : hanging) {
                AbortTransactionSpec abort = one.abort();
                LOG.warn("aborting a transaction left open on {} by an older incarnation (producer {} epoch {}; now {})", abort.topicPartition(),
                        abort.producerId(), abort.producerEpoch(), current.producerEpoch());
                get(admin.abortTransaction(abort).all());
            }
            return hanging.stream().map(one -> new Aborted(one.abort().topicPartition(), one.startOffset())).toList();
        } catch (AuthorizationException e) {
            warnUnauthorized(e);
            return List.of();
        }
    }

    /**
     * Aborts what is still hanging well after the look at recovery ran: a transaction of a producer id this transactional
     * id has had, open on a partition the worker writes, seen open at an earlier sweep with the same epoch and first
     * offset at least {@code minAge} ago, and not the coordinator's live transaction there. A live transaction cannot
     * stay open that long: the coordinator aborts one that outlives the transaction timeout (it looks every 10 s by
     * default), writing the markers to every partition it knows of. What is still open after that is a partition the
     * coordinator does not know the transaction touched, which only an abort from outside closes; until then
     * read_committed readers of that partition stop at it. The worker's clean-clone CI saw such a stall once, after
     * the look at recovery had found nothing: a transaction left open later, or where the look had not seen it yet.
     *
     * @param minAge the transaction timeout and a margin for the coordinator's own abort of transactions that outlive it
     * @return how many were aborted
     * @throws KafkaException when the broker does not answer in time (the next sweep tries again)
     */
    int sweep(Instant now, Duration minAge) {
        try {
            TransactionDescription current = describe();
            Live live = new Live(current.producerId(), current.producerEpoch(), UNFINISHED.contains(current.state()),
                    current.topicPartitions());
            List<AbortTransactionSpec> hanging = stillOpen(seenOpen, producerIds, live, producersOn(partitionsWritten()), now, minAge);
            int aborted = 0;
            for (AbortTransactionSpec abort : hanging) {
                LOG.warn("aborting a transaction open on {} for over {} s that its coordinator does not know of (producer {} epoch {}): "
                        + "read_committed readers of that partition were stopped at it", abort.topicPartition(), minAge.toSeconds(),
                        abort.producerId(), abort.producerEpoch());
                try {
                    get(admin.abortTransaction(abort).all());
                    aborted++;
                } catch (KafkaException e) {
                    LOG.warn("aborting the transaction open on {} failed ({}); the next sweep tries again", abort.topicPartition(), e.toString());
                }
            }
            return aborted;
        } catch (AuthorizationException e) {
            warnUnauthorized(e);
            return 0;
        }
    }

    /**
     * The transactions a sweep aborts, and what it remembers for the next one ({@code seen}, updated in place: every
     * transaction of {@code ours} open now, with when it was first seen, except the coordinator's live one).
     */
    static List<AbortTransactionSpec> stillOpen(Map<Open, Instant> seen, Set<Long> ours, Live live,
                                                Map<TopicPartition, List<ProducerState>> producers, Instant now, Duration minAge) {
        Map<Open, Instant> openNow = new HashMap<>();
        List<AbortTransactionSpec> hanging = new ArrayList<>();
        producers.forEach((partition, states) -> {
            for (ProducerState state : states) {
                if (!ours.contains(state.producerId()) || state.currentTransactionStartOffset().isEmpty()) {
                    continue;
                }
                if (live.unfinished() && live.producerId() == state.producerId() && live.epoch() == state.producerEpoch()
                        && live.partitions().contains(partition)) {
                    continue;
                }
                Open open = new Open(partition, state.producerId(), state.producerEpoch(), state.currentTransactionStartOffset().getAsLong());
                Instant first = seen.getOrDefault(open, now);
                openNow.put(open, first);
                if (Duration.between(first, now).compareTo(minAge) >= 0) {
                    hanging.add(new AbortTransactionSpec(partition, state.producerId(), (short) state.producerEpoch(),
                            state.coordinatorEpoch().orElse(0)));
                }
            }
        });
        seen.clear();
        seen.putAll(openNow);
        return hanging;
    }

    /** A transaction open on a partition, as one sweep saw it: the same one at the next sweep if all four match. */
    record Open(TopicPartition partition, long producerId, int epoch, long startOffset) {
    }

    /**
     * The coordinator's transaction of this transactional id, as it said at the sweep; {@code unfinished} while it is
     * open or its markers are being written, when the partitions it names will get them.
     */
    record Live(long producerId, int epoch, boolean unfinished, Set<TopicPartition> partitions) {
    }

    private TransactionDescription describe() {
        TransactionDescription current = get(admin.describeTransactions(List.of(transactionalId)).description(transactionalId));
        producerIds.add(current.producerId());
        return current;
    }

    private void warnUnauthorized(AuthorizationException e) {
        if (!warnedUnauthorized) {
            warnedUnauthorized = true;
            LOG.warn("cannot look for transactions an outage left open ({}): if read_committed consumers of {} stall after a broker "
                    + "outage, or this worker cannot find its committed offsets, find them with `kafka-transactions.sh find-hanging` "
                    + "and abort those of transactional id {}'s producer id with `kafka-transactions.sh abort`; or grant this "
                    + "principal Alter on the cluster", e.getMessage(), outputTopics, transactionalId);
        }
    }

    /**
     * What to abort: on each partition, a transaction still open there of this producer id with an epoch older than the
     * current one, and where its records began. Never the current epoch's (this incarnation's own), never another
     * producer's.
     */
    static List<Hanging> leftOpen(long producerId, int currentEpoch, Map<TopicPartition, List<ProducerState>> producers) {
        List<Hanging> hanging = new ArrayList<>();
        producers.forEach((partition, states) -> {
            for (ProducerState state : states) {
                if (state.producerId() == producerId && state.currentTransactionStartOffset().isPresent() && state.producerEpoch() < currentEpoch) {
                    hanging.add(new Hanging(new AbortTransactionSpec(partition, producerId, (short) state.producerEpoch(),
                            state.coordinatorEpoch().orElse(0)), state.currentTransactionStartOffset().getAsLong()));
                }
            }
        });
        return hanging;
    }

    /** A transaction left open: how to abort it, and the offset of its first record on its partition. */
    record Hanging(AbortTransactionSpec abort, long startOffset) {
    }

    /**
     * The output topics' partitions, and the partition of the offsets topic that holds the group's offsets, once that
     * topic exists (the broker makes it when a group first commits).
     */
    private List<TopicPartition> partitionsWritten() {
        Map<String, TopicDescription> described = get(admin.describeTopics(outputTopics).allTopicNames());
        List<TopicPartition> partitions = new ArrayList<>();
        for (String topic : outputTopics) {
            described.get(topic).partitions().forEach(p -> partitions.add(new TopicPartition(topic, p.partition())));
        }
        try {
            int offsetsPartitions = get(admin.describeTopics(List.of(Topic.GROUP_METADATA_TOPIC_NAME)).allTopicNames())
                    .get(Topic.GROUP_METADATA_TOPIC_NAME).partitions().size();
            // How the group coordinator places a group: the same mapping its clients use to find it.
            partitions.add(new TopicPartition(Topic.GROUP_METADATA_TOPIC_NAME, Utils.abs(groupId.hashCode()) % offsetsPartitions));
        } catch (UnknownTopicOrPartitionException e) {
            LOG.debug("no offsets topic yet: nothing of the group's to look at");
        }
        return partitions;
    }

    private Map<TopicPartition, List<ProducerState>> producersOn(List<TopicPartition> partitions) {
        Map<TopicPartition, List<ProducerState>> producers = new LinkedHashMap<>();
        get(admin.describeProducers(partitions).all()).forEach((partition, state) -> producers.put(partition, state.activeProducers()));
        return producers;
    }

    private <T> T get(KafkaFuture<T> future) {
        try {
            return future.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof KafkaException kafka) {
                throw kafka;
            }
            throw new KafkaException("looking for transactions left open failed", e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            throw new TimeoutException("no answer within " + timeout.toMillis() + " ms looking for transactions left open", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new KafkaException("interrupted looking for transactions left open", e);
        }
    }
}
