package dev.placementaudit.service;

import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A consumer that has read a transactional topic to its end is not behind: the markers that end the transactions are
 * not records, and a lag seen a minute ago is not the lag now. As an SRE found it, a caught-up worker and store said
 * "records behind and nothing committed" for about 50 s.
 */
@ExtendWith(KafkaBrokerExtension.class)
class ConsumerVitalsLagTest {

    @Test
    void aConsumerCaughtUpOnATransactionalTopicIsNotBehindAfterOnePoll(KafkaBroker broker) {
        String topic = KafkaBroker.uniqueTopic("vitals");
        broker.createTopics(1, topic);
        Map<String, Object> producerConfig = broker.clientConfig();
        producerConfig.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "vitals-" + topic);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig, new ByteArraySerializer(), new ByteArraySerializer())) {
            producer.initTransactions();
            for (int transaction = 0; transaction < 20; transaction++) {
                producer.beginTransaction();
                for (int i = 0; i < 50; i++) {
                    producer.send(new ProducerRecord<>(topic, new byte[]{(byte) i}));
                }
                producer.commitTransaction();
            }
        }
        Map<String, Object> consumerConfig = broker.clientConfig();
        consumerConfig.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        consumerConfig.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 100);
        TopicPartition partition = new TopicPartition(topic, 0);
        ConsumerVitals vitals = new ConsumerVitals(Duration.ofSeconds(60), Clock.systemUTC());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerConfig, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            int read = consumer.poll(Duration.ofSeconds(10)).count();
            vitals.sample(consumer);
            assertThat(read).isPositive();
            assertThat(vitals.lag()).as("behind while reading").isPositive();

            long end = consumer.endOffsets(List.of(partition)).get(partition);
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (consumer.position(partition) < end && System.nanoTime() < deadline) {
                read += consumer.poll(Duration.ofMillis(500)).count();
            }
            vitals.sample(consumer);

            assertThat(read).isEqualTo(1_000);
            assertThat(vitals.lag()).as("caught up, the last transaction's marker included").isZero();
        }
    }
}
