package dev.placementaudit.store.alerts;

import dev.placementaudit.events.PlacementAlert;
import dev.placementaudit.schemas.EventSerde;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Which projections publish to an alerts topic, read from its last events: an incident's key names its projection
 * ({@code incidentId@projection}), an alert carries it. A store warns at start when it shares its topic with another,
 * whose incident versions are its own (issue 54: one incident id went from v10 to v8 on a shared topic).
 */
public final class AlertsTopicPublishers {
    /** How many of each partition's last events are looked at. */
    private static final int TAIL = 5_000;
    private static final EventSerde<PlacementAlert> ALERTS = EventSerde.of(PlacementAlert.class);

    private AlertsTopicPublishers() {
    }

    /** The projections other than {@code projection} among the topic's last events. */
    public static Set<String> others(Map<String, Object> kafka, String topic, String projection, Duration bound) {
        Map<String, Object> config = new HashMap<>(kafka);
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        config.put(ConsumerConfig.CLIENT_ID_CONFIG, "audit-store-alerts-topic-check");
        config.remove(ConsumerConfig.GROUP_ID_CONFIG);
        config.remove(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG);
        Set<String> others = new TreeSet<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic, bound).stream().map(p -> new TopicPartition(topic, p.partition())).toList();
            consumer.assign(partitions);
            Map<TopicPartition, Long> begin = consumer.beginningOffsets(partitions, bound);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions, bound);
            partitions.forEach(p -> consumer.seek(p, Math.max(begin.get(p), end.get(p) - TAIL)));
            long deadline = System.nanoTime() + bound.toNanos();
            while (partitions.stream().anyMatch(p -> consumer.position(p) < end.get(p)) && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    String from = projectionOf(record);
                    if (from != null && !from.equals(projection)) {
                        others.add(from);
                    }
                }
            }
        }
        return others;
    }

    /** The projection an event names: in an incident's key, or in an alert's value; null for events from before either. */
    static String projectionOf(ConsumerRecord<byte[], byte[]> record) {
        String key = record.key() == null ? "" : new String(record.key(), StandardCharsets.UTF_8);
        if (key.startsWith("inc-")) {
            int at = key.indexOf('@');
            return at < 0 ? null : key.substring(at + 1);
        }
        try {
            return ALERTS.decode(record.value()).getProjection();
        } catch (RuntimeException notAnAlert) {
            return null;
        }
    }
}
