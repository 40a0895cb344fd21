package dev.placementaudit.worker.reconcile;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Where the {@link Reconciler} reads from: the summaries and dead letters from {@code worker.reconcile.lookback} ago, the
 * input's offsets of that time (from which every offset is looked for), and the partitions added to either since.
 */
final class ReadPositions {
    private static final Logger LOG = LoggerFactory.getLogger(Reconciler.class);

    private final Reconciler.Settings settings;
    private final Consumer<byte[], byte[]> consumer;
    private final Admin admin;
    private final Completeness completeness;
    private final Clock clock;

    ReadPositions(Reconciler.Settings settings, Consumer<byte[], byte[]> consumer, Admin admin, Completeness completeness, Clock clock) {
        this.settings = settings;
        this.consumer = consumer;
        this.admin = admin;
        this.completeness = completeness;
        this.clock = clock;
    }

    /**
     * The summaries and dead letters from {@code lookback} ago (and a minute more: an output is written after its load, and
     * the producer's and the worker's clocks differ); the input's offsets of that time, from which every offset is looked
     * for. The input itself is not read.
     */
    void start() {
        List<TopicPartition> outputs = new ArrayList<>();
        for (String topic : List.of(settings.resolvedTopic(), settings.deadLetterTopic())) {
            consumer.partitionsFor(topic, Duration.ofSeconds(30)).forEach(p -> outputs.add(new TopicPartition(topic, p.partition())));
        }
        List<TopicPartition> inputs = new ArrayList<>();
        consumer.partitionsFor(settings.inputTopic(), Duration.ofSeconds(30))
                .forEach(p -> inputs.add(new TopicPartition(settings.inputTopic(), p.partition())));
        consumer.assign(outputs);
        List<TopicPartition> all = new ArrayList<>(outputs);
        all.addAll(inputs);
        // The ends first: a record written while these two questions are asked is at or after them, so it is looked at. Asked
        // the other way round, a partition with nothing since the lookback answered "nothing" to the first, then an end
        // past the load written in between, which was never looked at (ReconcilerTest caught it on a busy machine).
        Map<TopicPartition, Long> ends = consumer.endOffsets(all, Duration.ofSeconds(30));
        long since = clock.millis() - settings.lookback().toMillis();
        Map<TopicPartition, Long> times = new HashMap<>();
        outputs.forEach(p -> times.put(p, since - 60_000));
        inputs.forEach(p -> times.put(p, since));
        Map<TopicPartition, OffsetAndTimestamp> found = consumer.offsetsForTimes(times, Duration.ofSeconds(30));
        for (TopicPartition partition : all) {
            OffsetAndTimestamp at = found.get(partition);
            long end = ends.get(partition);
            long offset = at == null ? end : Math.min(at.offset(), end);
            if (partition.topic().equals(settings.inputTopic())) {
                completeness.startAt(partition.partition(), offset);
            } else {
                consumer.seek(partition, offset);
            }
        }
        LOG.info("reconciler reading the summaries and dead letters of {} from {} ago: a load the group has committed past with no summary "
                + "or dead letter after {} is resolved again", settings.inputTopic(), settings.lookback(), settings.after());
    }

    /**
     * Partitions added since the start (a topic grown with {@code kafka-topics.sh --alter --partitions}), taken in without a
     * restart: an input partition the group has committed offsets on is looked at from its first offset, and a summary or
     * dead-letter partition is read from its start, before any look that counts on it is trusted.
     */
    void follow(Map<Integer, Long> committed, Set<TopicPartition> outputs) {
        List<TopicPartition> newInputs = committed.keySet().stream().filter(p -> !completeness.knows(p))
                .map(p -> new TopicPartition(settings.inputTopic(), p)).toList();
        if (!newInputs.isEmpty()) {
            Map<TopicPartition, OffsetSpec> earliest = new HashMap<>();
            newInputs.forEach(p -> earliest.put(p, OffsetSpec.earliest()));
            try {
                admin.listOffsets(earliest).all().get(10, TimeUnit.SECONDS).forEach((p, info) -> {
                    completeness.startAt(p.partition(), info.offset());
                    LOG.info("reconciling {}, a partition added since the reconciler started, from offset {}", p, info.offset());
                });
            } catch (Exception e) {
                throw new KafkaException("reading where the input's new partitions " + newInputs + " begin failed", e);
            }
        }
        Set<TopicPartition> assigned = consumer.assignment();
        List<TopicPartition> newOutputs = outputs.stream().filter(p -> !assigned.contains(p))
                .filter(p -> p.topic().equals(settings.resolvedTopic()) || p.topic().equals(settings.deadLetterTopic())).toList();
        if (!newOutputs.isEmpty()) {
            Set<TopicPartition> all = new HashSet<>(assigned);
            all.addAll(newOutputs);
            // Assigning anew keeps the position of every partition already read.
            consumer.assign(all);
            consumer.seekToBeginning(newOutputs);
            LOG.info("reading {}, added since the reconciler started, from the start", newOutputs);
        }
    }
}
