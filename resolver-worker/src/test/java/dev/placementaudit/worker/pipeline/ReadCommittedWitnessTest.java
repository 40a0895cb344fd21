package dev.placementaudit.worker.pipeline;

import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What proves a commit after an outage, against a real broker: a committed record is visible read_committed, an aborted
 * one is not, and one whose transaction is still open is not proven within the time given (the loop then redoes).
 */
@ExtendWith(KafkaBrokerExtension.class)
class ReadCommittedWitnessTest {

    @Test
    void tellsACommittedRecordFromAnAbortedOneAndFromOneStillOpen(KafkaBroker broker) throws Exception {
        String topic = KafkaBroker.uniqueTopic("witness");
        broker.createTopics(1, topic);
        ReadCommittedWitness witness = new ReadCommittedWitness(broker.clientConfig(), "witness-test", Duration.ofSeconds(3));
        try (KafkaProducer<byte[], byte[]> producer = transactional(broker, "tx-" + topic)) {
            RecordMetadata aborted = sendIn(producer, topic, false);
            RecordMetadata committed = sendIn(producer, topic, true);
            producer.beginTransaction();
            RecordMetadata open = producer.send(new ProducerRecord<>(topic, new byte[] {3})).get(10, TimeUnit.SECONDS);

            assertThat(witness.visible(at(committed), committed.offset())).as("committed").isTrue();
            assertThat(witness.visible(at(aborted), aborted.offset())).as("aborted").isFalse();
            long started = System.nanoTime();
            assertThat(witness.visible(at(open), open.offset())).as("still open").isFalse();
            assertThat(Duration.ofNanos(System.nanoTime() - started)).as("bounded by the time given").isLessThan(Duration.ofSeconds(10));

            producer.commitTransaction();
            assertThat(witness.visible(at(open), open.offset())).as("committed since").isTrue();
        }
    }

    private static RecordMetadata sendIn(KafkaProducer<byte[], byte[]> producer, String topic, boolean commit) throws Exception {
        producer.beginTransaction();
        RecordMetadata written = producer.send(new ProducerRecord<>(topic, new byte[] {commit ? (byte) 1 : (byte) 2})).get(10, TimeUnit.SECONDS);
        if (commit) {
            producer.commitTransaction();
        } else {
            producer.abortTransaction();
        }
        return written;
    }

    private static TopicPartition at(RecordMetadata written) {
        return new TopicPartition(written.topic(), written.partition());
    }

    private static KafkaProducer<byte[], byte[]> transactional(KafkaBroker broker, String transactionalId) {
        Map<String, Object> config = broker.clientConfig();
        config.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer());
        producer.initTransactions();
        return producer;
    }
}
