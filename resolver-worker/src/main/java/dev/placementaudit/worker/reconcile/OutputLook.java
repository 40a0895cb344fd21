package dev.placementaudit.worker.reconcile;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One look at the worker's outputs and its group's {@code __consumer_offsets} partition: where read_committed readers stop
 * and where each log ends. The reconciler bounds what is overdue by those ends; a partition whose readers stay held is a
 * transaction left hanging, reported with the operator's commands on {@code /health} and in
 * {@code pa_worker_hanging_partitions}, never aborted (docs/adr/0020-completeness-by-reconciliation.md).
 */
final class OutputLook {
    private static final Logger LOG = LoggerFactory.getLogger(Reconciler.class);
    private static final String OFFSETS_TOPIC = "__consumer_offsets";

    /** Where read_committed readers stop on each watched partition, and where its log ends. */
    record Offsets(Map<TopicPartition, Long> stable, Map<TopicPartition, Long> high) {
    }

    private final List<String> watchedTopics;
    private final String groupId;
    private final Duration hangingBound;
    private final Consumer<byte[], byte[]> consumer;
    private final Admin admin;
    private final HangingWatch hangingWatch;
    private final AtomicInteger hangingCount = new AtomicInteger();
    private volatile List<String> hanging = List.of();

    OutputLook(List<String> watchedTopics, String groupId, Duration hangingBound, Consumer<byte[], byte[]> consumer, Admin admin,
               MeterRegistry registry) {
        this.watchedTopics = watchedTopics;
        this.groupId = groupId;
        this.hangingBound = hangingBound;
        this.consumer = consumer;
        this.admin = admin;
        this.hangingWatch = new HangingWatch(hangingBound);
        Gauge.builder("pa.worker.hanging.partitions", hangingCount, AtomicInteger::get).description("output partitions whose readers are held "
                + "by a transaction left open (the runbook: docs/operations.md)").register(registry);
    }

    /** The problems a person must act on, for {@code /health}: a transaction left hanging. */
    List<String> problems() {
        List<String> now = hanging;
        return now.isEmpty() ? List.of() : List.of("a transaction left hanging holds read_committed readers of " + now
                + " (docs/operations.md: kafka-transactions.sh find-hanging, then abort)");
    }

    /**
     * The offsets of every watched partition and of the group's {@code __consumer_offsets} partition, as the broker says now.
     * The partitions are asked of the broker at each look, not taken from the consumer's cached metadata (up to
     * {@code metadata.max.age.ms} old): a partition added to an output since is looked at from the first look after it.
     */
    Offsets read() {
        List<TopicPartition> partitions = new ArrayList<>();
        Map<TopicPartition, Long> stable = new HashMap<>();
        Map<TopicPartition, Long> high = new HashMap<>();
        try {
            admin.describeTopics(watchedTopics).allTopicNames().get(10, TimeUnit.SECONDS).forEach((topic, description) ->
                    description.partitions().forEach(p -> partitions.add(new TopicPartition(topic, p.partition()))));
            partitions.add(groupOffsetsPartition());
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            partitions.forEach(p -> latest.put(p, OffsetSpec.latest()));
            admin.listOffsets(latest, new ListOffsetsOptions(IsolationLevel.READ_COMMITTED)).all().get(10, TimeUnit.SECONDS)
                    .forEach((p, info) -> stable.put(p, info.offset()));
            admin.listOffsets(latest, new ListOffsetsOptions(IsolationLevel.READ_UNCOMMITTED)).all().get(10, TimeUnit.SECONDS)
                    .forEach((p, info) -> high.put(p, info.offset()));
        } catch (Exception e) {
            throw new KafkaException("reading the outputs' offsets failed", e);
        }
        return new Offsets(stable, high);
    }

    /**
     * The {@code __consumer_offsets} partition holding the group's offsets (Kafka's own choice: the group id's hash modulo
     * the partitions). A transaction left open there holds the group itself: its committed offsets cannot be read while
     * they are unstable, so the loop cannot start again from them.
     */
    TopicPartition groupOffsetsPartition() {
        return groupOffsetsPartition(groupId, consumer.partitionsFor(OFFSETS_TOPIC, Duration.ofSeconds(10)).size());
    }

    static TopicPartition groupOffsetsPartition(String groupId, int partitions) {
        int hash = groupId.hashCode();
        return new TopicPartition(OFFSETS_TOPIC, (hash == Integer.MIN_VALUE ? 0 : Math.abs(hash)) % partitions);
    }

    /** Marks the partitions held past the bound as hanging (logged once as they start and stop), for {@link #problems}. */
    void lookForHanging(Offsets offsets, Instant now) {
        Map<TopicPartition, Long> stuck = hangingWatch.observe(offsets.stable(), offsets.high(), now);
        List<String> names = HangingWatch.names(stuck);
        if (!names.equals(hanging) && !names.isEmpty()) {
            LOG.error("a transaction left hanging holds every read_committed reader of {} (open for over {}; on __consumer_offsets it holds the "
                    + "worker's group, whose offsets cannot be read); the worker does not abort it. "
                    + "An operator: {} (docs/operations.md, 'A transaction left hanging')", names, hangingBound, HangingWatch.runbook(stuck));
        } else if (!names.equals(hanging)) {
            LOG.info("no transaction left hanging on the worker's outputs any more");
        }
        hanging = names;
        hangingCount.set(names.size());
    }
}
