package dev.placementaudit.testkit;

import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.schemas.EventSerde;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** The contract end to end on a real broker: a ModelLoaded goes out through the serde and comes back equal. */
@ExtendWith(KafkaBrokerExtension.class)
class ModelLoadedSmokeTest {

    @Test
    void aModelLoadedSurvivesTheBrokerUnchanged(KafkaBroker broker) throws Exception {
        String topic = KafkaBroker.uniqueTopic("model-loads");
        broker.createTopics(3, topic);
        ModelLoaded sent = SampleEvents.edgeLoad("chat-eu-1", "2026.11.2", 3);
        EventSerde<ModelLoaded> serde = EventSerde.of(ModelLoaded.class);

        Map<String, Object> producerConfig = broker.clientConfig();
        producerConfig.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        RecordMetadata written;
        try (KafkaProducer<String, ModelLoaded> producer = new KafkaProducer<>(producerConfig, new StringSerializer(), serde)) {
            written = producer.send(new ProducerRecord<>(topic, sent.getDeployment().getId(), sent)).get(10, TimeUnit.SECONDS);
        }

        Map<String, Object> consumerConfig = broker.clientConfig();
        consumerConfig.put(ConsumerConfig.GROUP_ID_CONFIG, "smoke");
        consumerConfig.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        List<ModelLoaded> received = new ArrayList<>();
        List<String> keys = new ArrayList<>();
        try (KafkaConsumer<String, ModelLoaded> consumer = new KafkaConsumer<>(consumerConfig, new StringDeserializer(), serde)) {
            consumer.subscribe(List.of(topic));
            await().atMost(Duration.ofSeconds(30)).until(() -> {
                consumer.poll(Duration.ofMillis(200)).forEach(r -> {
                    received.add(r.value());
                    keys.add(r.key());
                });
                return !received.isEmpty();
            });
        }

        assertThat(received).containsExactly(sent);
        assertThat(keys).containsExactly("chat-eu-1");
        assertThat(written.topic()).isEqualTo(topic);
        assertThat(received.get(0).getTensors()).hasSize(5);
    }
}
