package dev.placementaudit.store.alerts;

import dev.placementaudit.events.AlertKind;
import dev.placementaudit.events.PlacementAlert;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** A store finds, at start, the other projections that publish to its alerts topic: by an incident's key, or an alert's field. */
@ExtendWith(KafkaBrokerExtension.class)
class AlertsTopicPublishersTest {

    @Test
    void theOtherProjectionsOnAnAlertsTopicAreFoundByIncidentKeyAndAlertField(KafkaBroker broker) throws Exception {
        String topic = KafkaBroker.uniqueTopic("alerts");
        broker.createTopics(2, topic);
        PlacementAlert alert = PlacementAlert.newBuilder().setAlertId("a-1").setKind(AlertKind.LOST_MAPPING).setDeploymentId("android-000")
                .setModelId("llama").setFromRelease("r1").setToRelease("r2").setFromLoadId("l1").setToLoadId("l2").setBeforeBytes(0)
                .setAfterBytes(1).setDeltaBytes(1).setRule("any").setThresholdPercent(null).setThresholdBytes(null).setTopTensors(List.of())
                .setDetectedAt(Instant.parse("2026-12-07T00:00:00Z")).setProjection("blue").build();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(broker.clientConfig(), new ByteArraySerializer(), new ByteArraySerializer())) {
            producer.send(record(topic, "inc-6dc760ba303ec72d@mine", new byte[]{1}));
            producer.send(record(topic, "inc-6dc760ba303ec72d@green", new byte[]{1}));
            producer.send(record(topic, "inc-2a5af227c358ac18", new byte[]{1}));
            producer.send(record(topic, "android-000", EventSerde.of(PlacementAlert.class).encode(alert))).get();
        }

        assertThat(AlertsTopicPublishers.others(broker.clientConfig(), topic, "mine", Duration.ofSeconds(20))).containsExactly("blue", "green");
        assertThat(AlertsTopicPublishers.others(broker.clientConfig(), topic, "green", Duration.ofSeconds(20))).containsExactly("blue", "mine");
    }

    private static ProducerRecord<byte[], byte[]> record(String topic, String key, byte[] value) {
        return new ProducerRecord<>(topic, key.getBytes(StandardCharsets.UTF_8), value);
    }
}
