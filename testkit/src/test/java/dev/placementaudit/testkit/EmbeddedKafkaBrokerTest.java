package dev.placementaudit.testkit;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
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

@ExtendWith(KafkaBrokerExtension.class)
class EmbeddedKafkaBrokerTest {

    @Test
    void readCommittedConsumersSeeCommittedTransactionsOnly(KafkaBroker broker) throws Exception {
        String topic = KafkaBroker.uniqueTopic("tx");
        broker.createTopics(1, topic);
        try (KafkaProducer<String, String> producer = transactionalProducer(broker, "tx-" + topic)) {
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(topic, "k", "aborted"));
            producer.abortTransaction();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(topic, "k", "committed"));
            producer.commitTransaction();
        }

        assertThat(readAll(broker, topic, "read_committed", 1)).containsExactly("committed");
    }

    @Test
    void keepsItsLogAcrossARestart() throws Exception {
        try (EmbeddedKafkaBroker own = EmbeddedKafkaBroker.startEphemeral()) {
            own.createTopics(1, "survivor");
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerConfig(own), new StringSerializer(), new StringSerializer())) {
                producer.send(new ProducerRecord<>("survivor", "k", "before restart")).get(10, TimeUnit.SECONDS);
            }

            own.restart();

            assertThat(readAll(own, "survivor", "read_uncommitted", 1)).containsExactly("before restart");
        }
    }

    static List<String> readAll(KafkaBroker broker, String topic, String isolation, int expected) {
        Map<String, Object> config = broker.clientConfig();
        config.put(ConsumerConfig.GROUP_ID_CONFIG, "reader-" + topic);
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            await().atMost(Duration.ofSeconds(30)).until(() -> {
                consumer.poll(Duration.ofMillis(200)).forEach(r -> values.add(r.value()));
                return values.size() >= expected;
            });
            // One more poll: anything beyond what was expected would show up here.
            consumer.poll(Duration.ofMillis(500)).forEach(r -> values.add(r.value()));
        }
        return values;
    }

    private static Map<String, Object> producerConfig(KafkaBroker broker) {
        Map<String, Object> config = broker.clientConfig();
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        return config;
    }

    private static KafkaProducer<String, String> transactionalProducer(KafkaBroker broker, String transactionalId) {
        Map<String, Object> config = producerConfig(broker);
        config.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        return new KafkaProducer<>(config, new StringSerializer(), new StringSerializer());
    }
}
