package dev.placementaudit.worker.pipeline;

import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
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
        try (KafkaProducer<byte[], byte[]> producer = WorkerHarness.transactionalProducer(broker, "tx-" + topic)) {
            RecordMetadata aborted = sendIn(producer, topic, false);
            RecordMetadata committed = sendIn(producer, topic, true);
            producer.beginTransaction();
            RecordMetadata open = producer.send(new ProducerRecord<>(topic, new byte[] {3})).get(10, TimeUnit.SECONDS);

            assertThat(witness.visible(Map.of(at(committed), committed.offset()))).as("committed").isTrue();
            assertThat(witness.visible(Map.of(at(aborted), aborted.offset()))).as("aborted").isFalse();
            long started = System.nanoTime();
            assertThat(witness.visible(Map.of(at(open), open.offset()))).as("still open").isFalse();
            assertThat(Duration.ofNanos(System.nanoTime() - started)).as("bounded by the time given").isLessThan(Duration.ofSeconds(10));

            producer.commitTransaction();
            assertThat(witness.visible(Map.of(at(open), open.offset()))).as("committed since").isTrue();
        }
    }

    /**
     * A transaction's records on two partitions, batched and compressed as the worker's are, another producer's between
     * them: visible on both is proof; one partition's record aborted while the other's committed is not.
     */
    @Test
    void provesACommitOnlyWhenEveryPartitionsRecordIsVisible(KafkaBroker broker) throws Exception {
        String topic = KafkaBroker.uniqueTopic("witness2");
        broker.createTopics(2, topic);
        ReadCommittedWitness witness = new ReadCommittedWitness(broker.clientConfig(), "witness-test-2", Duration.ofSeconds(3));
        try (KafkaProducer<byte[], byte[]> worker = WorkerHarness.transactionalProducer(broker, "tx-" + topic);
             KafkaProducer<byte[], byte[]> other = WorkerHarness.transactionalProducer(broker, "tx-other-" + topic)) {
            other.beginTransaction();
            other.send(new ProducerRecord<>(topic, 0, null, new byte[] {9}));
            other.send(new ProducerRecord<>(topic, 1, null, new byte[] {9}));
            other.commitTransaction();
            worker.beginTransaction();
            List<Future<RecordMetadata>> onZero = new ArrayList<>();
            List<Future<RecordMetadata>> onOne = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                onZero.add(worker.send(new ProducerRecord<>(topic, 0, null, new byte[] {(byte) i})));
                onOne.add(worker.send(new ProducerRecord<>(topic, 1, null, new byte[] {(byte) i})));
            }
            worker.commitTransaction();
            worker.beginTransaction();
            RecordMetadata abortedOnOne = worker.send(new ProducerRecord<>(topic, 1, null, new byte[] {7})).get(10, TimeUnit.SECONDS);
            worker.abortTransaction();

            RecordMetadata firstOnZero = onZero.get(0).get();
            RecordMetadata middleOnOne = onOne.get(2).get();
            assertThat(witness.visible(Map.of(at(firstOnZero), firstOnZero.offset(), at(middleOnOne), middleOnOne.offset())))
                    .as("committed on both partitions, the second asked mid-batch").isTrue();
            assertThat(witness.visible(Map.of(at(firstOnZero), firstOnZero.offset(), at(abortedOnOne), abortedOnOne.offset())))
                    .as("aborted on one of them").isFalse();
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
}
