package dev.placementaudit.worker.pipeline;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.internals.Topic;
import org.apache.kafka.common.utils.Utils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
 * and is hanging by definition. That does not say the transaction was aborted: with Kafka 4.4 and a broker killed for
 * 3 s (WorkerBrokerOutageTest, while an experiment had both producers' records in flight), a transaction whose commit
 * the worker had seen succeed came back with its commit markers on the outputs and none on the offsets partition; this
 * abort then took its offsets away and its batch was redone, two loads resolved twice. Kafka's {@code abortTransaction}
 * can only abort; a fix that resumed after what the worker saw commit was tried and taken back (docs/benchmarks.md).
 * This is what {@code kafka-transactions.sh find-hanging} and {@code abort} do, limited to
 * this worker's own producer id and the partitions it writes. Without the rights to do it (describe and write on the
 * cluster), it says what an operator should run and goes on. The admin client is the worker's, shared by its producers'
 * lookups, and closed by the worker.
 */
final class HangingTransactions implements LeftOpen {
    private static final Logger LOG = LoggerFactory.getLogger(HangingTransactions.class);

    private final Admin admin;
    private final String transactionalId;
    private final List<String> outputTopics;
    private final String groupId;
    private final Duration timeout;
    private boolean warnedUnauthorized;

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
    public int abortLeftOpen() {
        try {
            TransactionDescription current = get(admin.describeTransactions(List.of(transactionalId)).description(transactionalId));
            List<AbortTransactionSpec> hanging = leftOpen(current.producerId(), current.producerEpoch(), producersOn(partitionsWritten()));
            for (AbortTransactionSpec abort : hanging) {
                LOG.warn("aborting a transaction left open on {} by an older incarnation (producer {} epoch {}; now {})", abort.topicPartition(),
                        abort.producerId(), abort.producerEpoch(), current.producerEpoch());
                get(admin.abortTransaction(abort).all());
            }
            return hanging.size();
        } catch (AuthorizationException e) {
            if (!warnedUnauthorized) {
                warnedUnauthorized = true;
                LOG.warn("cannot look for transactions an outage left open ({}): if read_committed consumers of {} stall after a broker "
                        + "outage, or this worker cannot find its committed offsets, find them with `kafka-transactions.sh find-hanging` "
                        + "and abort those of transactional id {}'s producer id with `kafka-transactions.sh abort`; or grant this "
                        + "principal Alter on the cluster", e.getMessage(), outputTopics, transactionalId);
            }
            return 0;
        }
    }

    /**
     * What to abort: on each partition, a transaction still open there of this producer id with an epoch older than the
     * current one. Never the current epoch's (this incarnation's own), never another producer's.
     */
    static List<AbortTransactionSpec> leftOpen(long producerId, int currentEpoch, Map<TopicPartition, List<ProducerState>> producers) {
        List<AbortTransactionSpec> hanging = new ArrayList<>();
        producers.forEach((partition, states) -> {
            for (ProducerState state : states) {
                if (state.producerId() == producerId && state.currentTransactionStartOffset().isPresent() && state.producerEpoch() < currentEpoch) {
                    hanging.add(new AbortTransactionSpec(partition, producerId, (short) state.producerEpoch(), state.coordinatorEpoch().orElse(0)));
                }
            }
        });
        return hanging;
    }

    /** The output topics' partitions, and the partition of the offsets topic that holds the group's offsets. */
    private List<TopicPartition> partitionsWritten() {
        List<String> topics = new ArrayList<>(outputTopics);
        topics.add(Topic.GROUP_METADATA_TOPIC_NAME);
        Map<String, TopicDescription> described = get(admin.describeTopics(topics).allTopicNames());
        List<TopicPartition> partitions = new ArrayList<>();
        for (String topic : outputTopics) {
            described.get(topic).partitions().forEach(p -> partitions.add(new TopicPartition(topic, p.partition())));
        }
        int offsetsPartitions = described.get(Topic.GROUP_METADATA_TOPIC_NAME).partitions().size();
        // How the group coordinator places a group: the same mapping its clients use to find it.
        partitions.add(new TopicPartition(Topic.GROUP_METADATA_TOPIC_NAME, Utils.abs(groupId.hashCode()) % offsetsPartitions));
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
